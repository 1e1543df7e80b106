// Fixture: the Image kind's adapter, on the kit.
import { adapter } from '../kit/adapter.ts';
import { verify } from './verify.ts';

export const image = adapter + verify;
