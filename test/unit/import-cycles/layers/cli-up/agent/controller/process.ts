// Fixture: the in-cluster process imports a command.
import { main } from '../cli/main.ts';

export const process = main + 1;
