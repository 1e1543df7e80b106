// Fixture: the shared Sync run validates; it knows no front end.
import { validate } from '../validate/validate.ts';

export const run = validate + 1;
