import { DockerConfigCredentials } from '../../oci/auth/docker-config.ts';
import type { DiskSource } from '../../oci/disk-source.ts';
import { RegistryDiskSource } from '../../oci/registry-disk-source.ts';

/**
 * Where the Image kind and the CLI get their registry client. One instance
 * per credentials file, so token caches and connections are shared by a run.
 */
export interface SourceOptions {
  /** A docker config.json the user names (`--docker-config`); else $DOCKER_CONFIG/config.json; else anonymous. */
  dockerConfig?: string | undefined;
}

const sources = new Map<string, DiskSource>();

export function diskSourceFor(options: SourceOptions = {}): DiskSource {
  const key = options.dockerConfig ?? '';
  let s = sources.get(key);
  if (!s) {
    s = makeDiskSource(options);
    sources.set(key, s);
  }
  return s;
}

/** Credentials only from a file the user names, or $DOCKER_CONFIG/config.json. */
function makeDiskSource(options: SourceOptions): DiskSource {
  const credentials = DockerConfigCredentials.fromEnvironment(options.dockerConfig);
  return new RegistryDiskSource(credentials ? { credentials } : {});
}
