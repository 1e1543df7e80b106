import { join } from 'node:path';
import type { AgentConfig } from '../config/config.ts';
import type { SyncConfig } from './settings.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import { createSource } from '../source/create-source.ts';
import { gitCredentials } from '../source/credentials.ts';
import type { Source } from '../source/source.ts';
import { readKeyFiles } from '../source/verify-signature.ts';
import { version } from '../version.ts';

/**
 * The Source of one Sync, through the one source factory. Credentials and
 * trusted keys are functions of the secret resolver, read again before every
 * fetch: a fixed password file or a rotated token takes effect without a
 * restart, and the on-disk Git cache is kept across such a change.
 */
export function sourceForSync(sync: SyncConfig, config: AgentConfig, secrets: SecretResolver): Promise<Source> {
  const { git, oci, directory } = sync.source;
  if (directory) return createSource({ source: { directory }, path: sync.path }, { cacheDir: gitCacheDir(config) });
  // OCI: the source reads its registry credentials and signature policy through the resolver before every fetch.
  if (oci) return createSource({ source: { oci }, path: sync.path }, { cacheDir: sourceCacheDir(config), secrets, userAgent: `kupenstack/${version}` });
  const verify = git?.verify;
  return createSource(
    { source: { git: git && { url: git.url, ref: git.ref, ...(verify ? { verify: { mode: verify.mode } } : {}) } }, path: sync.path },
    {
      cacheDir: gitCacheDir(config),
      credentials: () => gitCredentials(git?.credentials, secrets),
      publicKeys: async () =>
        verify?.publicKeysFile
          ? readKeyFiles([verify.publicKeysFile])
          : verify?.publicKeysSecretRef
            ? Object.values((await secrets.getAll?.(verify.publicKeysSecretRef)) ?? {})
            : [],
    },
  );
}

export function gitCacheDir(config: AgentConfig): string {
  return join(config.stateDir, 'git-cache');
}

/** OCI contents are kept by digest under their own folder (`oci/<algorithm>-<hex>`). */
function sourceCacheDir(config: AgentConfig): string {
  return join(config.stateDir, 'oci-cache');
}
