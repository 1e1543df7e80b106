// Fixture: a front end uses what a kind's face offers.
import { apply } from '../act/apply.ts';
import { signaturePolicy } from '../kinds/image/index.ts';

export const agent = apply + signaturePolicy;
