import { openBlob } from './blob.ts';
import type { RegistryClient } from './client.ts';
import { OciError } from './errors.ts';
import type { Descriptor, ImageManifest } from './manifest.ts';
import { lookInCosignPlaces } from './cosign-places.ts';

/**
 * Finds the attestations (`cosign attest`) of one manifest digest where
 * cosign puts them: sigstore bundles among the OCI 1.1 referrers (cosign
 * v3), and DSSE envelopes in the classic `sha256-<hex>.att` tag (cosign v2,
 * or v3 with --new-bundle-format=false). Nothing is verified here
 * (attestation-verify.ts).
 */

const dsseType = 'application/vnd.dsse.envelope.v1+json';
const bundleTypePrefix = 'application/vnd.dev.sigstore.bundle';
const emptyConfigType = 'application/vnd.oci.empty.v1+json';
/** A keyless classic attestation's signing certificate (PEM). */
const certificateAnnotation = 'dev.sigstore.cosign/certificate';

export type FoundAttestation =
  /** A DSSE envelope (JSON) of the `.att` tag, with the certificate annotation of a keyless one. */
  | { kind: 'envelope'; where: string; envelope: unknown; certificate?: string | undefined }
  /** A sigstore bundle (JSON) whose content is a DSSE envelope. */
  | { kind: 'bundle'; where: string; bundle: unknown };

export interface FoundAttestations {
  found: FoundAttestation[];
  /** Where was looked, for the message when nothing was found. */
  looked: string[];
}

/** A scan report can be large; a larger blob is not read. A long referrers list is not read to its end. */
const maxAttestationBytes = 8 * 1024 * 1024;
const maxReferrers = 64;

export async function findAttestations(client: RegistryClient, repository: string, digest: string, signal?: AbortSignal): Promise<FoundAttestations> {
  return lookInCosignPlaces(
    client,
    repository,
    digest,
    {
      suffix: 'att',
      maxReferrers,
      accept: (d) => {
        const t = d.artifactType ?? '';
        return t === '' || t === emptyConfigType || t.startsWith(bundleTypePrefix);
      },
      read: (m, where) => fromManifest(client, repository, m, where, signal),
    },
    signal,
  );
}

async function fromManifest(
  client: RegistryClient,
  repository: string,
  manifest: ImageManifest,
  where: string,
  signal: AbortSignal | undefined,
): Promise<FoundAttestation[]> {
  const out: FoundAttestation[] = [];
  for (const layer of manifest.layers) {
    const isDsse = layer.mediaType === dsseType;
    if (!isDsse && !layer.mediaType.startsWith(bundleTypePrefix)) continue;
    const raw = await readBlob(client, repository, layer, signal);
    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new OciError('oci.format', `${client.registry}/${repository}: the ${isDsse ? 'DSSE envelope' : 'sigstore bundle'} in ${where} is not JSON`);
    }
    const certificate = layer.annotations?.[certificateAnnotation];
    if (isDsse) out.push({ kind: 'envelope', where, envelope: json, ...(certificate ? { certificate } : {}) });
    else out.push({ kind: 'bundle', where, bundle: json });
  }
  return out;
}

async function readBlob(client: RegistryClient, repository: string, d: Descriptor, signal: AbortSignal | undefined): Promise<Buffer> {
  if (d.size > maxAttestationBytes)
    throw new OciError(
      'oci.too-large',
      `${client.registry}/${repository}: blob ${d.digest} (an attestation) is ${d.size} bytes (limit ${maxAttestationBytes})`,
    );
  const chunks: Buffer[] = [];
  for await (const c of openBlob(client, repository, d, { signal }) as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}
