// Fixture: the Image kind's face.
export { image } from './adapter.ts';
export { verify as signaturePolicy } from './verify.ts';
