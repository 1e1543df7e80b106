// Fixture: the engine settings read the Sync settings' notification targets.
import { target } from '../notify/target.ts';

export const config = target + 1;
