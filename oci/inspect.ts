import type { CredentialStore } from './auth/credentials.ts';
import type { DiskSource, Platform, ResolvedDisk } from './disk-source.ts';
import { toDiskRequest } from './reference.ts';
import { RegistryDiskSource } from './registry-disk-source.ts';

/** `kupenstack image inspect`: what a reference resolves to, without downloading the disk. */

export interface InspectResult {
  reference: string;
  /** What the tag (or digest) points at: the index when multi-platform, else the manifest. */
  digest: string;
  manifestDigest: string;
  indexDigest?: string;
  tag?: string;
  format: ResolvedDisk['packaging'];
  diskFormat: string;
  compression?: string;
  /** Bytes of the disk when known (uncompressed layer, annotation), else of the layer. */
  size: number;
  blob: ResolvedDisk['blob'];
  platform?: Platform;
  virtualSize?: number;
  annotations: Record<string, string>;
  properties: Record<string, string>;
  minDisk?: number;
  minRam?: number;
  warnings?: string[];
  /** KubeVirt VM export: the disk shown (io.kubevirt.disk.name). */
  diskName?: string;
}

export async function inspectImage(
  ref: string,
  options: { insecure?: boolean; credentials?: CredentialStore; platform?: Platform; signal?: AbortSignal; source?: DiskSource; disk?: string } = {},
): Promise<InspectResult> {
  const source = options.source ?? new RegistryDiskSource(options.credentials ? { credentials: options.credentials } : {});
  const resolved = await source.resolve(
    {
      ...toDiskRequest(ref),
      ...(options.platform ? { platform: options.platform } : {}),
      ...(options.insecure ? { insecure: true } : {}),
      ...(options.disk !== undefined ? { disk: options.disk } : {}),
    },
    options.signal,
  );
  return {
    reference: resolved.reference,
    digest: resolved.indexDigest ?? resolved.manifestDigest,
    manifestDigest: resolved.manifestDigest,
    ...(resolved.indexDigest ? { indexDigest: resolved.indexDigest } : {}),
    ...(resolved.tag ? { tag: resolved.tag } : {}),
    format: resolved.packaging,
    diskFormat: resolved.diskFormat,
    ...(resolved.compression ? { compression: resolved.compression } : {}),
    size: resolved.diskSize ?? resolved.blob.size,
    blob: resolved.blob,
    ...(resolved.platform ? { platform: resolved.platform } : {}),
    ...(resolved.virtualSize !== undefined ? { virtualSize: resolved.virtualSize } : {}),
    annotations: resolved.annotations,
    properties: resolved.properties,
    ...(resolved.minDisk !== undefined ? { minDisk: resolved.minDisk } : {}),
    ...(resolved.minRam !== undefined ? { minRam: resolved.minRam } : {}),
    ...(resolved.warnings ? { warnings: resolved.warnings } : {}),
    ...(resolved.diskName !== undefined ? { diskName: resolved.diskName } : {}),
  };
}
