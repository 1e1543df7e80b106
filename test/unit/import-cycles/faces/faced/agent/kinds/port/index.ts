// Fixture: the Port kind's face: its adapter uses another kind through that kind's face.
import { signaturePolicy } from '../image/index.ts';

export const port = signaturePolicy + 1;
