// Fixture: the Image kind's face.
import { follows } from './oci-follow.ts';

export const image = follows + 1;
