// Fixture: the Lease reads the controller's options.
import { options } from '../options.ts';

export const leader = options + 1;
