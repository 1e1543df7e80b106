// Fixture: the in-cluster Sync loop over the shared Sync run.
import { run } from '../../sync/sync-run.ts';

export const loop = run + 1;
