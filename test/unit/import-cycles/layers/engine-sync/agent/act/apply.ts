// Fixture: the engine imports the Sync kit.
import { status } from '../sync/status.ts';

export const apply = status + 1;
