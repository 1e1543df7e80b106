// Fixture: a.ts and b.ts import each other (a file-level cycle).
import { b } from './b.ts';

export const a = (): string => `a${b.length}`;
