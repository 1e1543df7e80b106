// Fixture: the resource loop over the engine door, the Leases, the Sync loop's label and the options.
import { apply } from '../../act/apply.ts';
import { options } from '../options.ts';
import { leader } from '../leases/leader.ts';
import { loop } from '../syncs/sync-loop.ts';
import { queue } from './work-queue.ts';

export const resources = apply + options + leader + loop + queue;
