import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpenStackCloud } from '../openstack/cloud.ts';
import type { ApiCounters } from '../openstack/counters.ts';
import type { SecretResolver } from '../secrets/resolver.ts';

/**
 * The OpenStack client from a clouds.yaml kept in a Secret. The client (and
 * its tokens) is reused while the Secret is unchanged; a rotated Secret gives
 * a new client on the next run, without a restart. The file the clouds.yaml
 * parser needs lives in a private (0700) temporary folder, mode 0600.
 */
export function cloudFromSecret(secrets: SecretResolver, ref: { name: string; namespace?: string; key: string }, cloudName: string, counters?: ApiCounters): () => Promise<OpenStackCloud> {
  const dir = mkdtempSync(join(tmpdir(), 'kupenstack-clouds-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  let current: { hash: string; cloud: OpenStackCloud } | undefined;
  return async () => {
    const text = await secrets.get(ref);
    const hash = createHash('sha256').update(text).digest('hex');
    if (current?.hash === hash) return current.cloud;
    const file = join(dir, `clouds-${hash.slice(0, 12)}.yaml`);
    writeFileSync(file, text, { mode: 0o600 });
    try {
      current = { hash, cloud: OpenStackCloud.fromCloudsYaml(cloudName, file, counters) };
    } finally {
      rmSync(file, { force: true });
    }
    return current.cloud;
  };
}
