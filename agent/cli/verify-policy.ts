import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { SignaturePolicy } from '../../oci/signature-policy.ts';
import { UsageError } from '../errors.ts';
import { signaturePolicy } from '../kinds/image/index.ts';
import { EnvFileSecretResolver } from '../secrets/env-file.ts';

/**
 * `--verify FILE` of `kupenstack image import`: a YAML or JSON file holding
 * what an Image's `spec.verify` holds (publicKey, or keyless with its
 * trusted root), checked by the same code. Its `file:` and `env:`
 * references are read as the standalone agent reads them; a `secretRef`
 * is read from `.kupenstack/secrets/kupenstack-system/<name>/<key>`.
 */
export async function loadVerifyPolicy(file: string): Promise<SignaturePolicy> {
  let doc: unknown;
  try {
    doc = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(
      `--verify ${file}: ${err instanceof Error ? err.message : String(err)}; it must be a YAML or JSON file with what an Image's spec.verify holds (publicKey: {file: cosign.pub}, or keyless: {...})`,
    );
  }
  const known = new Set(['provider', 'publicKey', 'keyless']);
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new UsageError(`--verify ${file}: expected a mapping with publicKey or keyless, as under an Image's spec.verify`);
  const unknown = Object.keys(doc).filter((k) => !known.has(k));
  if (unknown.length > 0)
    throw new UsageError(`--verify ${file}: unknown key ${unknown.join(', ')}; an Image's spec.verify has provider, publicKey and keyless`);
  const secrets = new EnvFileSecretResolver({ secretsDir: join('.kupenstack', 'secrets') });
  return signaturePolicy({ where: `--verify ${file}`, read: (ref) => secrets.get(ref) }, doc, 'kupenstack-system');
}
