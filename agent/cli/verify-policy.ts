import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { AttestationRequirement } from '../../oci/attestation-policy.ts';
import type { SignaturePolicy } from '../../oci/signature-policy.ts';
import { UsageError } from '../errors.ts';
import { attestationRequirements, signaturePolicy } from '../kinds/image/index.ts';
import { EnvFileSecretResolver } from '../secrets/env-file.ts';

/**
 * `--verify FILE` of `kupenstack image import`: a YAML or JSON file holding
 * what an Image's `spec.verify` holds (publicKey, or keyless with its
 * trusted root, and the attestations the digest must carry), checked by
 * the same code. Its `file:` and `env:`
 * references are read as the standalone agent reads them; a `secretRef`
 * is read from `.kupenstack/secrets/kupenstack-system/<name>/<key>`.
 */
export interface CliVerifyPolicy {
  signature: SignaturePolicy;
  /** `attestations:` of the file, each with its signer; empty when it lists none. */
  attestations: AttestationRequirement[];
}

export async function loadVerifyPolicy(file: string): Promise<CliVerifyPolicy> {
  let doc: unknown;
  try {
    doc = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(
      `--verify ${file}: ${err instanceof Error ? err.message : String(err)}; it must be a YAML or JSON file with what an Image's spec.verify holds (publicKey: {file: cosign.pub}, or keyless: {...})`,
    );
  }
  const known = new Set(['provider', 'publicKey', 'keyless', 'attestations']);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new UsageError(`--verify ${file}: expected a mapping with publicKey or keyless, as under an Image's spec.verify`);
  const unknown = Object.keys(doc).filter((k) => !known.has(k));
  if (unknown.length > 0)
    throw new UsageError(`--verify ${file}: unknown key ${unknown.join(', ')}; an Image's spec.verify has provider, publicKey, keyless and attestations`);
  const secrets = new EnvFileSecretResolver({ secretsDir: join('.kupenstack', 'secrets') });
  const reader = { where: `--verify ${file}`, read: (ref: Parameters<typeof secrets.get>[0]) => secrets.get(ref) };
  const signature = await signaturePolicy(reader, doc, 'kupenstack-system');
  return { signature, attestations: await attestationRequirements(reader, doc, 'kupenstack-system') };
}
