import type { DiskSource } from '../../oci/disk-source.ts';
import { KupenstackError } from '../errors.ts';

/**
 * Where the Image kind and the CLI get their registry client. One instance
 * per credentials file, so token caches and connections are shared by a run.
 */
export interface SourceOptions {
  /** A docker config.json the user names (`--docker-config`, DOCKER_CONFIG); anonymous without. */
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

function makeDiskSource(_options: SourceOptions): DiskSource {
  throw new KupenstackError('image.oci-pending', 'the OCI registry client (oci/) is not merged yet');
}
