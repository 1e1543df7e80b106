// Fixture: the engine door takes data.
import { validate } from '../validate/validate.ts';

export const apply = validate + 1;
