import type { Dispatcher } from 'undici';
import { DockerConfigCredentials } from '../../oci/auth/docker-config.ts';
import type { CredentialStore } from '../../oci/auth/credentials.ts';
import type { DiskSource } from '../../oci/disk-source.ts';
import { RegistryDiskSource } from '../../oci/registry-disk-source.ts';
import { version } from '../version.ts';

/**
 * Where the Image kind and the CLI get their registry client (the
 * composition root of oci/). One instance per credentials and advice, so
 * token caches and connections are shared by a run.
 */
export interface SourceOptions {
  /** A docker config.json the user names (`--docker-config`); else $DOCKER_CONFIG/config.json; else anonymous. */
  dockerConfig?: string | undefined;
  /**
   * Credentials already read (a `.dockerconfigjson` Secret named by the
   * manifest's `credentialsSecretRef`); `key` names them for the cache, never a value.
   */
  credentials?: { key: string; store: CredentialStore } | undefined;
  /** No credentials at all, not even the agent's docker config (a tenant's Image, net/registry-credentials.ts). */
  anonymous?: boolean | undefined;
  /** What a plain-HTTP registry reached over https is told to do: `pass --insecure` (CLI, the default) or the manifest field. */
  plainHttpAdvice?: string | undefined;
  /** The egress gate every connection of these clients goes through (agent/net/egress.ts); its key names its rules. */
  egress?: { key: string; dispatcher: Dispatcher } | undefined;
}

/** A registry client for one command (`image inspect`, `image import`): nothing outlives it. */
export function diskSourceFor(options: SourceOptions = {}): DiskSource {
  return makeDiskSource(options);
}

/** One registry client per credentials and advice, so token caches and connections are shared; owned by whoever runs the Image kind (ImageMemory). */
export class DiskSources {
  private readonly sources = new Map<string, DiskSource>();

  get(options: SourceOptions = {}): DiskSource {
    const key = JSON.stringify([
      options.dockerConfig ?? '',
      options.credentials?.key ?? '',
      options.anonymous === true,
      options.plainHttpAdvice ?? '',
      options.egress?.key ?? '',
    ]);
    let s = this.sources.get(key);
    if (!s) {
      s = makeDiskSource(options);
      this.sources.set(key, s);
    }
    return s;
  }
}

/** Credentials only from a Secret the manifest names, a file the user names, or $DOCKER_CONFIG/config.json; none when anonymous. */
function makeDiskSource(options: SourceOptions): DiskSource {
  const credentials = options.credentials?.store ?? (options.anonymous === true ? undefined : DockerConfigCredentials.fromEnvironment(options.dockerConfig));
  return new RegistryDiskSource({
    ...(credentials ? { credentials } : {}),
    client: {
      userAgent: `kupenstack/${version}`,
      ...(options.plainHttpAdvice ? { plainHttpAdvice: options.plainHttpAdvice } : {}),
      ...(options.egress ? { dispatcher: options.egress.dispatcher } : {}),
    },
  });
}
