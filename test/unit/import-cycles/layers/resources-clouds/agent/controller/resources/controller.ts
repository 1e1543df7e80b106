// Fixture: the resource loop imports the cloud loop.
import { clouds } from '../clouds/cloud-loop.ts';

export const resources = clouds + 1;
