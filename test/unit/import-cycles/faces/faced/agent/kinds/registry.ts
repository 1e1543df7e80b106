// Fixture: the registry reads each kind's face.
import { image } from './image/index.ts';
import { port } from './port/index.ts';

export const adapters = image + port;
