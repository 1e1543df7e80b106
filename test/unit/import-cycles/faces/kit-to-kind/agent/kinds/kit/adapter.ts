// Fixture: the shared kit reaches into a kind.
import { memory } from '../image/memory.ts';

export const adapter = memory + 1;
