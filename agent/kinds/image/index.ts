/**
 * The Image kind's one face: kinds/registry.ts reads the first two; an OCI
 * source of a Sync (source/oci-secrets.ts) and `kupenstack verify-policy`
 * read registry credentials and signature policies as an Image does.
 */
export { image } from './adapter.ts';
export { imageExport } from './export.ts';
export { readRegistrySecret } from './registry-secret.ts';
export { signaturePolicy } from './verify.ts';
export { attestationRequirements } from './attest.ts';
