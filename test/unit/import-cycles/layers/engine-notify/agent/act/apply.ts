// Fixture: the engine imports the notifier.
import { notifier } from '../notify/notifier.ts';

export const apply = notifier + 1;
