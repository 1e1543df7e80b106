// Fixture: the in-cluster front end composes the same pieces, one sub-folder per loop.
import { hook } from '../hooks/git-hook.ts';
import { loop } from './syncs/sync-loop.ts';
import { resources } from './resources/controller.ts';
import { clouds } from './clouds/cloud-loop.ts';
import { leader } from './leases/leader.ts';

export const controller = hook + loop + resources + clouds + leader;
