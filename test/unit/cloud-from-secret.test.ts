import { describe, expect, it } from 'vitest';
import { CloudsSecretMissingError, cloudFromSecret } from '../../agent/controller/clouds/cloud-from-secret.ts';
import { KubeSecretNotFoundError } from '../../agent/secrets/kubernetes.ts';
import type { SecretKey, SecretResolver } from '../../agent/secrets/resolver.ts';

/** A resolver whose Secrets are all missing, as KubeSecretResolver reports it. */
const missing: SecretResolver = {
  get: (ref: SecretKey) => Promise.reject(new KubeSecretNotFoundError(ref, 'does not exist')),
};

describe('the clouds.yaml of --clouds-secret, not there yet', () => {
  it('written by an OpenStackCloud install: says the install writes it and the loop waits, not to create it', async () => {
    const cloud = cloudFromSecret(missing, { namespace: 'kupenstack-system', name: 'kupenstack-cloud-lab-clouds-yaml', key: 'clouds.yaml' }, 'lab');
    const err = await cloud().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CloudsSecretMissingError);
    expect((err as Error).message).toContain('Secret kupenstack-system/kupenstack-cloud-lab-clouds-yaml key clouds.yaml does not exist');
    expect((err as Error).message).toContain('the install of OpenStackCloud lab writes it');
    expect((err as Error).message).not.toContain('kubectl create secret');
    expect((err as Error).cause).toBeInstanceOf(KubeSecretNotFoundError);
  });

  it('a Secret of the operator\'s own: how to create it, with its name and namespace', async () => {
    const cloud = cloudFromSecret(missing, { namespace: 'ops', name: 'my-cloud', key: 'clouds.yaml' }, 'prod');
    const err = await cloud().catch((e: unknown) => e);
    expect((err as Error).message).toContain('kubectl create secret generic my-cloud --from-file=clouds.yaml -n ops');
  });
});
