// Fixture: the client side of `get syncs` reads the Sync loop's names.
import { loop } from '../../controller/syncs/sync-loop.ts';

export const client = loop + 1;
