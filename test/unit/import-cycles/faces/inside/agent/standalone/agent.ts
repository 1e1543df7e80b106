// Fixture: a front end reaches past the Image kind's face into one of its files.
import { follows } from '../kinds/image/oci-follow.ts';

export const agent = follows + 1;
