import type { Dispatcher } from 'undici';
import { DockerConfigCredentials } from '../../oci/auth/docker-config.ts';
import type { CredentialStore } from '../../oci/auth/credentials.ts';
import type { DiskSource } from '../../oci/disk-source.ts';
import { RegistryDiskSource, type RegistryDiskSourceOptions } from '../../oci/registry-disk-source.ts';
import { version } from '../version.ts';
import type { ThroughputBreach } from '../../lib/stream/throughput.ts';
import { BoundExceeded, bounds, formatSize } from '../util/bounds.ts';

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
  // The operator's own command: the bounds on work for a tenant (util/bounds.ts) are not its.
  return makeDiskSource(options, false);
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
      s = makeDiskSource(options, true);
      this.sources.set(key, s);
    }
    return s;
  }
}

/** Credentials only from a Secret the manifest names, a file the user names, or $DOCKER_CONFIG/config.json; none when anonymous. */
function makeDiskSource(options: SourceOptions, bounded: boolean): DiskSource {
  const credentials = options.credentials?.store ?? (options.anonymous === true ? undefined : DockerConfigCredentials.fromEnvironment(options.dockerConfig));
  return new RegistryDiskSource({
    ...(credentials ? { credentials } : {}),
    ...(bounded ? kindBounds() : {}),
    client: {
      userAgent: `kupenstack/${version}`,
      ...(options.plainHttpAdvice ? { plainHttpAdvice: options.plainHttpAdvice } : {}),
      ...(options.egress ? { dispatcher: options.egress.dispatcher } : {}),
    },
  });
}

/** The Image kind's registry downloads, bounded (util/bounds.ts): the disk's decompressed size, the rate and the deadline. */
function kindBounds(): Pick<RegistryDiskSourceOptions, 'maxDiskBytes' | 'tooLarge' | 'throughput'> {
  const b = bounds();
  return {
    maxDiskBytes: b.imageBytes,
    tooLarge: (where, bytes, limit) =>
      new BoundExceeded(
        'image-size',
        bytes === undefined ? `more than ${formatSize(limit)}` : formatSize(bytes),
        formatSize(limit),
        `${where}: the disk, decompressed, is over the cluster admin's limit per image; nothing was stored`,
      ),
    throughput: {
      limits: { minBytesPerSecond: b.downloadMinBytesPerSecond, windowMs: b.downloadRateWindowMs, deadlineMs: b.downloadDeadlineMs },
      fail: (where, breach) => downloadBreach(where, breach),
    },
  };
}

/** A download too slow or too long, in the bound's words (shared by OCI blobs and Image URLs). */
export function downloadBreach(where: string, breach: ThroughputBreach): BoundExceeded {
  const b = bounds();
  if (breach.kind === 'deadline')
    return new BoundExceeded(
      'download-deadline',
      `${Math.round(breach.elapsedMs / 1000)} s`,
      `${Math.round(b.downloadDeadlineMs / 1000)} s`,
      `${where}: the download took too long (${formatSize(breach.bytes)} received); given up`,
    );
  return new BoundExceeded(
    'download-rate',
    `${formatSize(Math.floor(breach.bytesPerSecond))}/s`,
    `${formatSize(b.downloadMinBytesPerSecond)}/s`,
    `${where}: the download was slower than the minimum rate over ${Math.round(breach.windowMs / 1000)} s; given up`,
    '<',
  );
}
