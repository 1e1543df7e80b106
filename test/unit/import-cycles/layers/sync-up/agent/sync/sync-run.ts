// Fixture: the shared Sync run imports the standalone runner.
import { runner } from '../standalone/sync-runner.ts';

export const run = runner + 1;
