// Fixture: a kind imports a front end.
import { loop } from '../gitops/sync-loop.ts';

export const image = loop + 1;
