// Fixture: the engine imports only its settings, which reach notify/.
import { config } from '../config/config.ts';

export const apply = config + 1;
