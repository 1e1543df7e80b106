import { DockerConfigCredentials } from '../../oci/auth/docker-config.ts';
import type { CredentialStore } from '../../oci/auth/credentials.ts';
import type { SignaturePolicy } from '../../oci/signature-policy.ts';
import { KupenstackError } from '../errors.ts';
import { readRegistrySecret, signaturePolicy } from '../kinds/image/index.ts';
import type { SyncSpec } from '../model/kinds.generated.ts';
import { describeSecret, type SecretKey, type SecretResolver } from '../secrets/resolver.ts';
import { SourceError } from './source.ts';

/**
 * What an OCI source reads through the agent's secret resolver before each
 * fetch: the registry credentials (a `.dockerconfigjson` Secret, or a docker
 * config file standalone) and the signature policy, built by the Image
 * kind's own policy reader (the same fields, the same messages). A Sync is
 * cluster-scoped: its Secrets are in the agent's namespace.
 */

export type OciSpec = NonNullable<SyncSpec['source']['oci']>;

/** An empty namespace reads as "the agent's own" (the resolver's default). */
function inAgentNamespace(ref: SecretKey): SecretKey {
  const { namespace, ...rest } = ref;
  return namespace ? ref : rest;
}

export function ociCredentials(oci: OciSpec, secrets: SecretResolver | undefined): (() => Promise<CredentialStore | undefined>) | undefined {
  if (oci.dockerConfigFile !== undefined) {
    const file = oci.dockerConfigFile;
    return () => Promise.resolve(DockerConfigCredentials.fromFile(file));
  }
  const ref = oci.secretRef;
  if (!ref) return undefined;
  const secret: SecretKey = { name: ref.name, key: '.dockerconfigjson' };
  return async () => {
    if (!secrets) throw new SourceError('auth', `source.oci.secretRef names ${describeSecret(secret)}, but this agent reads no Secrets; use dockerConfigFile`);
    return (await readRegistrySecret(secrets, secret, (why) => new SourceError('auth', why))).store;
  };
}

export function ociSignaturePolicy(oci: OciSpec, secrets: SecretResolver | undefined): (() => Promise<SignaturePolicy>) | undefined {
  const verify = oci.verify;
  if (!verify) return undefined;
  const where = 'source.oci.verify';
  return async () => {
    // Attestations are judged for VM images only: a Sync's artifact must not seem gated by a list nothing checks.
    if (verify.attestations !== undefined)
      throw new SourceError('signature', `${where}.attestations: attestations are checked for Images only; remove them from the Sync's source`);
    try {
      return await signaturePolicy(
        {
          where,
          read: (ref) => {
            if (!secrets)
              throw new KupenstackError('image.signature', `${where}: the signature policy is in ${describeSecret(ref)}, but this agent reads no secrets`);
            return secrets.get(inAgentNamespace(ref));
          },
        },
        verify,
        '',
      );
    } catch (err) {
      if (err instanceof SourceError) throw err;
      // A policy that cannot be read or is malformed: the operator fixes it, like a missing key.
      throw new SourceError('signature', err instanceof Error ? err.message : String(err), { cause: err });
    }
  };
}
