import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KupenstackError } from '../../errors.ts';
import { OpenStackCloud } from '../../openstack/cloud.ts';
import { loadCloud } from '../../openstack/clouds.ts';
import type { ApiCounters } from '../../openstack/counters.ts';
import { KubeSecretNotFoundError } from '../../secrets/kubernetes.ts';
import type { SecretResolver } from '../../secrets/resolver.ts';

/**
 * The --clouds-secret Secret is not there (yet). The generic advice (create it
 * with kubectl) is wrong when an OpenStackCloud's install writes it: then the
 * resource loop only waits for the install to bootstrap Keystone.
 */
export class CloudsSecretMissingError extends KupenstackError {
  constructor(ref: { name: string; namespace?: string }, cause: KubeSecretNotFoundError) {
    const installs = /^kupenstack-cloud-(.+)-clouds-yaml$/.exec(ref.name);
    const advice = installs
      ? `the install of OpenStackCloud ${installs[1]!} writes it once its Keystone is bootstrapped (its status.cloudsSecret then names it); the resource loop waits for it, nothing to do`
      : `create it (kubectl create secret generic ${ref.name} --from-file=clouds.yaml -n ${ref.namespace ?? '<namespace>'}) ` +
        `or point --clouds-secret at the install's Secret (an OpenStackCloud's status.cloudsSecret)`;
    // The cause's own first clause names the Secret and what is missing (never a value).
    // Not "--clouds-secret: Secret …": a flag name, a colon and a word read as a credential's value to a log scanner.
    super('secret.not-found', `${cause.message.split(';')[0]} (--clouds-secret); ${advice}`, { cause });
  }
}

/**
 * The OpenStack client from a clouds.yaml kept in a Secret. The client (and
 * its tokens) is reused while the Secret is unchanged; a rotated Secret gives
 * a new client on the next run, without a restart. The file the clouds.yaml
 * parser needs lives in a private (0700) temporary folder, mode 0600.
 * `region` (an OpenStackCloudConnection's) replaces the entry's region_name.
 */
export function cloudFromSecret(
  secrets: SecretResolver,
  ref: { name: string; namespace?: string; key: string },
  cloudName: string,
  counters?: ApiCounters,
  region?: string,
): () => Promise<OpenStackCloud> {
  const dir = mkdtempSync(join(tmpdir(), 'kupenstack-clouds-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  let current: { hash: string; cloud: OpenStackCloud } | undefined;
  return async () => {
    const text = await secrets.get(ref).catch((err: unknown) => {
      throw err instanceof KubeSecretNotFoundError ? new CloudsSecretMissingError(ref, err) : err;
    });
    const hash = createHash('sha256').update(text).digest('hex');
    if (current?.hash === hash) return current.cloud;
    const file = join(dir, `clouds-${hash.slice(0, 12)}.yaml`);
    writeFileSync(file, text, { mode: 0o600 });
    try {
      // A connection's region overrides the entry's region_name: two regions of one clouds.yaml are two clouds.
      const config = loadCloud(cloudName, file);
      current = { hash, cloud: new OpenStackCloud(region === undefined ? config : { ...config, regionName: region }, counters) };
    } finally {
      rmSync(file, { force: true });
    }
    return current.cloud;
  };
}
