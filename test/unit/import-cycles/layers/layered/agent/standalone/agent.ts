// Fixture: the standalone front end composes the Sync kit and the engine.
import { apply } from '../act/apply.ts';
import { run } from '../sync/sync-run.ts';

export const agent = apply + run;
