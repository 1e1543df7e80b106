import type { RegistryClient } from './client.ts';
import { parseDigest } from './digest.ts';
import { OciError } from './errors.ts';
import { fetchManifest, type Descriptor, type ImageManifest } from './manifest.ts';
import { listReferrers } from './referrers.ts';

/** What one of cosign's finders asks: which referrers to open, which classic tag, and how to read a manifest found. */
export interface CosignPlaces<T> {
  /** The classic tag's suffix: `sig` (signatures) or `att` (attestations). */
  suffix: 'sig' | 'att';
  /** A long referrers list is not read to its end. */
  maxReferrers: number;
  accept(referrer: Descriptor): boolean;
  read(manifest: ImageManifest, where: string): Promise<T[]>;
}

/**
 * The two places cosign puts what it makes for a digest: the OCI 1.1
 * referrers (sigstore bundles of cosign v3; the referrers tag schema on
 * registries without the API), then the classic `sha256-<hex>.<suffix>` tag.
 * Nothing is verified here.
 */
export async function lookInCosignPlaces<T>(
  client: RegistryClient,
  repository: string,
  digest: string,
  places: CosignPlaces<T>,
  signal?: AbortSignal,
): Promise<{ found: T[]; looked: string[] }> {
  const { algorithm, hex } = parseDigest(digest);
  const found: T[] = [];
  const referrers = await listReferrers(client, repository, digest, signal ? { signal } : {});
  for (const d of referrers.slice(0, places.maxReferrers)) {
    if (!places.accept(d)) continue;
    const m = await fetchManifest(client, repository, d.digest, signal);
    if (m.manifest.kind === 'manifest') found.push(...(await places.read(m.manifest, `referrer ${d.digest}`)));
  }
  const tag = `${algorithm}-${hex}.${places.suffix}`;
  try {
    const m = await fetchManifest(client, repository, tag, signal);
    if (m.manifest.kind === 'manifest') found.push(...(await places.read(m.manifest, `tag ${tag}`)));
  } catch (err) {
    if (!(err instanceof OciError && err.code === 'oci.not-found')) throw err;
  }
  return { found, looked: [`the referrers of ${digest}`, `the tag ${tag}`] };
}
