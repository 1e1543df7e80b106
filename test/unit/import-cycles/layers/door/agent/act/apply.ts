// Fixture: the engine door loads a folder itself.
import { loadTree } from '../load/load.ts';

export const apply = loadTree + 1;
