// Fixture: a loop's file imports the process that composes it.
import { process } from '../process.ts';

export const run = process + 1;
