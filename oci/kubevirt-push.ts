import type { Readable } from 'node:stream';
import { createZstdCompress } from 'node:zlib';
import type { CredentialStore } from './auth/credentials.ts';
import { clientFor, type RegistryClient, type RegistryClientOptions } from './client.ts';
import { sha256Of } from './digest.ts';
import { OciError } from './errors.ts';
import { formatByteQuantity, kubevirt } from './formats/kubevirt.ts';
import { vmimage } from './formats/vmimage-annotations.ts';
import { createdAnnotation, ociIndex, ociManifest, titleAnnotation } from './media-types.ts';
import { ociArchitecture } from './platform.ts';
import { DiskHeadCheck, Sha256Tap, type PushResult } from './push.ts';
import { formatReference, parseReference, type Reference } from './reference.ts';
import { putManifest, uploadBuffer, uploadStream } from './upload.ts';

/**
 * `kupenstack image export --format kubevirt`: a raw disk stream → KubeVirt's
 * OCI VM export (VEP #256, what `virtctl vmexport download --format=oci`
 * writes and its import reads): an index naming one manifest for the
 * platform, a minimal VirtualMachine as the config blob whose one volume is
 * the disk, and the disk as a raw+zstd layer named by io.kubevirt.disk.name.
 * One pass in constant memory: the raw bytes are sniffed (raw only) and
 * hashed, zstd-compressed and uploaded while the layer digest is computed;
 * the manifests are written only after the stream ended without error.
 */

export interface KubevirtPushOptions {
  /** The volume name (io.kubevirt.disk.name), also the VM's disk and claim name. */
  diskName: string;
  /** metadata.name of the VirtualMachine in the config blob (a DNS-1123 name). */
  vmName: string;
  /** Bytes the stream will give (Glance's size), when known: another count fails the push. */
  size?: number;
  /** Architecture in Glance's or OCI's spelling (x86_64 or amd64); default amd64, as KubeVirt's exporter. */
  architecture?: string;
  /** spec.template.spec.domain.resources.requests.memory in MiB (Glance's min_ram); default 1024. */
  memoryMib?: number;
  /** Manifest annotations (io.kupenstack.vmimage.*: what the import maps back to Glance). */
  annotations?: Record<string, string>;
  insecure?: boolean;
  credentials?: CredentialStore;
  client?: Omit<RegistryClientOptions, 'registry' | 'insecure' | 'credentials'>;
  signal?: AbortSignal;
  onProgress?: (bytes: number, total: number) => void;
  /** The created timestamp (tests pin it for reproducible digests). */
  created?: string;
}

/** A DNS-1123 label from any image name (`CirrOS 0.6` → `cirros-0-6`); `vm` when nothing is left. */
export function vmNameOf(name: string): string {
  const label = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return label === '' ? 'vm' : label;
}

/** The VirtualMachine the config blob holds: stopped, one virtio disk backed by a claim of the disk's name. */
export function minimalVirtualMachine(o: Pick<KubevirtPushOptions, 'diskName' | 'vmName' | 'memoryMib'>, architecture: string): Record<string, unknown> {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: o.vmName },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          architecture,
          domain: {
            devices: { disks: [{ name: o.diskName, disk: { bus: 'virtio' } }] },
            resources: { requests: { memory: `${o.memoryMib ?? 1024}Mi` } },
          },
          volumes: [{ name: o.diskName, persistentVolumeClaim: { claimName: o.diskName } }],
        },
      },
    },
  };
}

interface SentDisk {
  layer: { mediaType: string; digest: string; size: number; annotations: Record<string, string> };
  format: string;
}

/** The disk: sniffed, hashed raw, compressed, uploaded; its layer descriptor with KubeVirt's annotations (and our digest of the raw bytes). */
async function sendDisk(client: RegistryClient, target: Reference, source: Readable, o: KubevirtPushOptions): Promise<SentDisk> {
  const check = new DiskHeadCheck('raw', formatReference(target));
  const total = o.size ?? 0;
  let read = 0;
  const tap = new Sha256Tap((n) => o.onProgress?.((read += n), total));
  const compressor = createZstdCompress();
  source.on('error', (e) => check.destroy(e));
  check.on('error', (e) => tap.destroy(e));
  tap.on('error', (e) => compressor.destroy(e));
  source.pipe(check).pipe(tap).pipe(compressor);
  const sent = await uploadStream(client, target.repository, compressor, o.signal ? { signal: o.signal } : {});
  if (o.size !== undefined && tap.bytes !== o.size)
    throw new OciError('oci.truncated', `the disk for ${formatReference(target)} gave ${tap.bytes} bytes, its source says ${o.size}; nothing was tagged`);
  const annotations = {
    [kubevirt.diskName]: o.diskName,
    [kubevirt.diskSize]: formatByteQuantity(tap.bytes),
    [titleAnnotation]: `${o.diskName}.raw.zst`,
    [vmimage.uncompressedSize]: String(tap.bytes),
    [vmimage.uncompressedDigest]: tap.digest(),
  };
  return { layer: { mediaType: kubevirt.diskRawZstd, digest: sent.digest, size: sent.size, annotations }, format: check.format ?? 'raw' };
}

export async function pushKubevirtStream(source: Readable, ref: string, o: KubevirtPushOptions): Promise<PushResult> {
  const target = parseReference(ref);
  const client = clientFor(target.registry, o);
  const { repository } = target;
  const created = o.created ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  const architecture = ociArchitecture(o.architecture ?? 'amd64');
  const { layer, format } = await sendDisk(client, target, source, o);
  const vm = Buffer.from(JSON.stringify(minimalVirtualMachine(o, architecture)));
  const config = await uploadBuffer(client, repository, vm, o.signal);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: ociManifest,
      artifactType: kubevirt.vmArtifact,
      config: { mediaType: kubevirt.vmConfig, ...config },
      layers: [layer],
      annotations: { ...o.annotations, [createdAnnotation]: created, [titleAnnotation]: o.vmName },
    }),
  );
  // By digest first: the index names it, and a tag points only at a complete artifact.
  const manifestDigest = await putManifest(client, repository, sha256Of(manifest), manifest, ociManifest, o.signal);
  const index = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: ociIndex,
      artifactType: kubevirt.vmArtifact,
      manifests: [{ mediaType: ociManifest, digest: manifestDigest, size: manifest.length, platform: { architecture, os: 'linux' } }],
      annotations: { [createdAnnotation]: created, [titleAnnotation]: o.vmName },
    }),
  );
  const indexDigest = await putManifest(client, repository, target.tag ?? target.digest ?? sha256Of(index), index, ociIndex, o.signal);
  if (target.digest && target.digest !== indexDigest)
    throw new OciError('oci.digest', `pushed ${indexDigest}, not the digest ${target.digest} the reference names; push to a tag instead`);
  return {
    reference: formatReference({ registry: target.registry, repository, digest: indexDigest }),
    ...(target.tag ? { tag: target.tag } : {}),
    manifestDigest,
    indexDigest,
    layer: { digest: layer.digest, size: layer.size, mediaType: layer.mediaType },
    diskFormat: format,
    uploaded: layer.size,
  };
}
