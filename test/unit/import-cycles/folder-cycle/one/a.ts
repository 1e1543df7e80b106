// Fixture: one/ → two/ here, two/ → one/ in two/c.ts; no two files form a circle.
import { b } from '../two/b.ts';

export const a = b + 1;
