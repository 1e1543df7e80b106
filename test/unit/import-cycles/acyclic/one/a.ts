// Fixture: one/ → two/ only.
import { b } from '../two/b.ts';

export const a = b + 1;
