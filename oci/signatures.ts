import { openBlob } from './blob.ts';
import type { RegistryClient } from './client.ts';
import { OciError } from './errors.ts';
import type { Descriptor, ImageManifest } from './manifest.ts';
import { lookInCosignPlaces } from './cosign-places.ts';

/**
 * Finds the cosign signatures of one manifest digest, in the two places
 * cosign puts them: the OCI 1.1 referrers of the digest (sigstore bundles of
 * cosign v3; also the referrers tag schema on registries without the API)
 * and the classic `sha256-<hex>.sig` tag (simple-signing payload as a layer,
 * signature in an annotation). Nothing is verified here (cosign-verify.ts).
 */

const simpleSigningType = 'application/vnd.dev.cosign.simplesigning.v1+json';
const signatureAnnotation = 'dev.cosignproject.cosign/signature';
/** A keyless classic signature's signing certificate and its chain (PEM). */
const certificateAnnotation = 'dev.sigstore.cosign/certificate';
/** application/vnd.dev.sigstore.bundle.v0.3+json and its predecessors. */
const bundleTypePrefix = 'application/vnd.dev.sigstore.bundle';

export type FoundSignature =
  /** A classic cosign signature: `signature` is over the payload bytes. */
  | { kind: 'simple-signing'; where: string; payload: Buffer; signature: Buffer; certificate?: string | undefined }
  /** A sigstore bundle (JSON), verified with the sigstore packages. */
  | { kind: 'bundle'; where: string; bundle: unknown };

export interface FoundSignatures {
  found: FoundSignature[];
  /** Where was looked, for the message when nothing was found. */
  looked: string[];
}

/** Signatures are small; a larger blob is not one, and a long referrers list is not read to its end. */
const maxSignatureBytes = 1024 * 1024;
const maxReferrers = 32;

export async function findSignatures(client: RegistryClient, repository: string, digest: string, signal?: AbortSignal): Promise<FoundSignatures> {
  return lookInCosignPlaces(
    client,
    repository,
    digest,
    { suffix: 'sig', maxReferrers, accept: isSignatureReferrer, read: (m, where) => fromManifest(client, repository, m, where, signal) },
    signal,
  );
}

/**
 * cosign v3 bundles; cosign v2's experimental OCI 1.1 mode
 * (application/vnd.dev.cosign.artifact.sig.v1+json). Registries that take
 * the artifact type from the config media type (go-containerregistry's, the
 * OCI 1.1 release candidates) list the empty config's type, or none: those
 * are read too, and only their signature layers count.
 */
function isSignatureReferrer(d: Descriptor): boolean {
  const t = d.artifactType ?? '';
  return t === '' || t === emptyConfigType || t.startsWith(bundleTypePrefix) || t.startsWith('application/vnd.dev.cosign');
}

const emptyConfigType = 'application/vnd.oci.empty.v1+json';

async function fromManifest(
  client: RegistryClient,
  repository: string,
  manifest: ImageManifest,
  where: string,
  signal: AbortSignal | undefined,
): Promise<FoundSignature[]> {
  const out: FoundSignature[] = [];
  for (const layer of manifest.layers) {
    if (layer.mediaType === simpleSigningType) {
      const encoded = layer.annotations?.[signatureAnnotation];
      if (!encoded) continue;
      const certificate = layer.annotations?.[certificateAnnotation];
      out.push({
        kind: 'simple-signing',
        where,
        payload: await readSmallBlob(client, repository, layer, signal),
        signature: Buffer.from(encoded, 'base64'),
        ...(certificate ? { certificate } : {}),
      });
    } else if (layer.mediaType.startsWith(bundleTypePrefix)) {
      const raw = await readSmallBlob(client, repository, layer, signal);
      let bundle: unknown;
      try {
        bundle = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new OciError('oci.format', `${client.registry}/${repository}: the sigstore bundle in ${where} is not JSON`);
      }
      out.push({ kind: 'bundle', where, bundle });
    }
  }
  return out;
}

async function readSmallBlob(client: RegistryClient, repository: string, d: Descriptor, signal: AbortSignal | undefined): Promise<Buffer> {
  if (d.size > maxSignatureBytes)
    throw new OciError('oci.too-large', `${client.registry}/${repository}: blob ${d.digest} (a signature) is ${d.size} bytes (limit ${maxSignatureBytes})`);
  const chunks: Buffer[] = [];
  for await (const c of openBlob(client, repository, d, { signal }) as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}
