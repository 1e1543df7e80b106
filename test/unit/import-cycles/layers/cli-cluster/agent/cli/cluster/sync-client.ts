// Fixture: a CLI client reads the resource loop.
import { store } from '../../controller/resources/status-store.ts';

export const client = store + 1;
