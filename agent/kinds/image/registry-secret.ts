import { createHash } from 'node:crypto';
import { DockerConfigCredentials } from '../../../oci/auth/docker-config.ts';
import { describeSecret, type SecretKey, type SecretResolver } from '../../secrets/resolver.ts';

/**
 * Registry credentials from a `.dockerconfigjson` Secret (an Image's
 * `credentialsSecretRef`, a Sync's `source.oci.secretRef`), read through the
 * resolver at each use so a rotation takes effect. `hash` identifies the value
 * (a cache key, a memo), never shows it. `fail` makes the caller's error from
 * the reason, so each names the object the user knows.
 */
export async function readRegistrySecret(
  secrets: SecretResolver,
  secret: SecretKey,
  fail: (why: string) => Error,
): Promise<{ store: DockerConfigCredentials; hash: string }> {
  const value = secrets.getAll ? (await secrets.getAll(secret))['.dockerconfigjson'] : await secrets.get(secret);
  if (value === undefined) throw fail(`${describeSecret(secret)} has no .dockerconfigjson; create it with kubectl create secret docker-registry`);
  const hash = createHash('sha256').update(value).digest('hex');
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    // The parser's message may quote the value: not kept.
    throw fail(`${describeSecret(secret)} is not JSON; it must hold a docker config (kubectl create secret docker-registry)`);
  }
  return { store: new DockerConfigCredentials(describeSecret(secret), json), hash };
}
