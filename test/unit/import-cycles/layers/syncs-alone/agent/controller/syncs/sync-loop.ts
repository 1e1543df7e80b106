// Fixture: the Sync loop imports the resource loop.
import { objects } from '../resources/objects.ts';

export const loop = objects + 1;
