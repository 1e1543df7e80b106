// Fixture: b.ts and a.ts import each other (a file-level cycle).
import type { a } from './a.ts';

export const b: ReturnType<typeof a>[] = [];
