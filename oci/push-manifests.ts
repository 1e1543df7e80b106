import type { CredentialStore } from './auth/credentials.ts';
import { clientFor, type RegistryClientOptions } from './client.ts';
import { OciError } from './errors.ts';
import { fluxConfigMediaType, fluxContentMediaType } from './flux-artifact.ts';
import { ociManifest } from './media-types.ts';
import { formatReference, parseReference } from './reference.ts';
import { packFolder } from './tar-pack.ts';
import { putManifest, uploadBuffer } from './upload.ts';

/**
 * `kupenstack push manifests DIR REF`: a folder of manifests → Flux's
 * artifact (flux-artifact.ts), so Flux's OCIRepository and our Sync read the
 * same thing. No timestamp is added unless given as an annotation: the same
 * folder gives the same layer and the same manifest digest.
 */

export interface PushManifestsOptions {
  /** Manifest annotations (k=v), e.g. org.opencontainers.image.source / .revision. */
  annotations?: Record<string, string>;
  insecure?: boolean;
  credentials?: CredentialStore;
  client?: Omit<RegistryClientOptions, 'registry' | 'insecure' | 'credentials'>;
  signal?: AbortSignal;
}

export interface PushManifestsResult {
  /** registry/repository@manifest digest */
  reference: string;
  tag?: string;
  manifestDigest: string;
  layer: { digest: string; size: number };
  files: string[];
}

/** Flux's config blob: an empty JSON object. */
const config = Buffer.from('{}');

export async function pushManifests(dir: string, ref: string, options: PushManifestsOptions = {}): Promise<PushManifestsResult> {
  const target = parseReference(ref);
  if (target.tag === undefined)
    throw new OciError('oci.reference', `"${ref}" names no tag; push manifests to a tag (registry/repository:tag), so a Sync can follow it`);
  const packed = await packFolder(dir);
  if (packed.files.length === 0) throw new OciError('oci.reference', `${dir} holds no file; give the folder of manifests`);
  const client = clientFor(target.registry, options);
  const { repository } = target;
  const layer = await uploadBuffer(client, repository, packed.data, options.signal);
  const cfg = await uploadBuffer(client, repository, config, options.signal);
  const manifest = {
    schemaVersion: 2,
    mediaType: ociManifest,
    config: { mediaType: fluxConfigMediaType, digest: cfg.digest, size: cfg.size },
    layers: [{ mediaType: fluxContentMediaType, digest: layer.digest, size: layer.size }],
    ...(options.annotations && Object.keys(options.annotations).length > 0 ? { annotations: options.annotations } : {}),
  };
  const raw = Buffer.from(JSON.stringify(manifest));
  const manifestDigest = await putManifest(client, repository, target.tag, raw, ociManifest, options.signal);
  return {
    reference: formatReference({ registry: target.registry, repository, digest: manifestDigest }),
    tag: target.tag,
    manifestDigest,
    layer,
    files: packed.files,
  };
}
