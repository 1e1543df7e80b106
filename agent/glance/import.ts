import type { AttestationRequirement, VerifiedAttestation } from '../../oci/attestation-policy.ts';
import type { DiskRequest, DiskSource } from '../../oci/disk-source.ts';
import type { SignaturePolicy, VerifiedSignature } from '../../oci/signature-policy.ts';
import { KupenstackError } from '../errors.ts';
import { findOrCreateVersion, ociTransfers, uploadVersion, type GlanceTarget, type TransferProgress } from './versions.ts';
import { ociTag, versionProperties, type GlanceImage } from './version-rules.ts';
import type { Looked } from '../../lib/progress.ts';

/**
 * One import of an OCI reference into a project, outside any manifest
 * (`kupenstack image import`): the version for the digest, found or made,
 * with its data. No marker: an Image manifest that later follows the same
 * digest adopts it without a second transfer. The reference is parsed by
 * oci/reference.ts (`toDiskRequest`), like `image push` and `inspect` do.
 */

export interface ImportOptions {
  name?: string | undefined;
  /** Globs of artifact properties copied to Glance (default: descriptive ones only). */
  allowedProperties?: readonly string[];
  onResolved?: (info: { reference: string; manifestDigest: string; size?: number | undefined }) => void;
  /** Import only when a cosign signature meets this policy (checked before anything is made in Glance). */
  verify?: SignaturePolicy | undefined;
  onVerified?: (v: VerifiedSignature) => void;
  /** Attestations the digest must carry besides the signature (checked right after it, before Glance). */
  attestations?: AttestationRequirement[] | undefined;
  onAttested?: (a: VerifiedAttestation[]) => void;
  onProgress?: (p: TransferProgress) => void;
}

export interface ImportResult {
  image: GlanceImage;
  manifestDigest: string;
  /** True when Glance already held this digest: nothing was downloaded. */
  reused: boolean;
  /** Blob bytes read from the registry by this import. */
  blobBytes: number;
}

const defaultAllowedProperties: readonly string[] = ['os_distro', 'os_version', 'os_type', 'architecture'];

export async function importDisk(g: GlanceTarget, source: DiskSource, request: DiskRequest, options: ImportOptions = {}): Promise<ImportResult> {
  const disk = await source.resolve(request, g.signal);
  options.onResolved?.({ reference: disk.reference, manifestDigest: disk.manifestDigest, size: disk.diskSize ?? disk.blob.size });
  if (options.verify) {
    if (!source.verifySignature) throw new KupenstackError('internal', 'this image source cannot check signatures');
    options.onVerified?.(await source.verifySignature(disk, options.verify, g.signal));
  }
  if (options.attestations && options.attestations.length > 0) {
    if (!source.verifyAttestations) throw new KupenstackError('internal', 'this image source cannot check attestations');
    options.onAttested?.(await source.verifyAttestations(disk, options.attestations, g.signal));
  }
  const base = disk.repository.slice(disk.repository.lastIndexOf('/') + 1);
  const name = options.name ?? (disk.tag !== undefined ? `${base}:${disk.tag}` : `${base}@${disk.manifestDigest.slice(0, 19)}`);
  const look = {
    name,
    properties: versionProperties(disk, options.allowedProperties ?? defaultAllowedProperties, {}),
    tags: disk.tag !== undefined && request.digest === undefined ? [ociTag(disk.tag)] : [],
  };
  const before = ociTransfers.blobBytes;
  // Not in requeue mode: another worker's upload is waited for, never answered as waiting.
  const found = done(await findOrCreateVersion(g, disk, look, { hidden: false }));
  let image = found.image;
  const reused = image.status !== 'queued';
  if (!reused) image = done(await uploadVersion(g, image, disk, source, options.onProgress));
  return { image, manifestDigest: disk.manifestDigest, reused, blobBytes: ociTransfers.blobBytes - before };
}

/** The value: an import never runs in requeue mode, so it is never waiting. */
function done<T>(looked: Looked<T>): T {
  if ('waiting' in looked) throw new KupenstackError('internal', `an import is waited for, yet it answered waiting: ${looked.waiting.reason}`);
  return looked.done;
}
