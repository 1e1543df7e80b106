// Fixture: the OpenStackCloud loop borrows the resource loop's work queue.
import { queue } from '../resources/work-queue.ts';
import { loop } from '../syncs/sync-loop.ts';

export const clouds = queue + loop;
