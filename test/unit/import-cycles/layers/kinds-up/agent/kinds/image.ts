// Fixture: a kind imports a front end.
import { loop } from '../controller/syncs/sync-loop.ts';

export const image = loop + 1;
