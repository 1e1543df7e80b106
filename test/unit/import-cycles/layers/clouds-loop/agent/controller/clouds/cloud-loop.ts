// Fixture: the OpenStackCloud loop imports the resource loop itself.
import { run } from '../resources/namespace-run.ts';

export const clouds = run + 1;
