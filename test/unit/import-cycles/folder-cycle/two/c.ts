// Fixture: two/ → one/ (one/a.ts goes the other way).
import { d } from '../one/d.ts';

export const c = d + 1;
