import { header, type RegistryClient } from './client.ts';
import { parseDigest } from './digest.ts';
import { fetchManifest, parseManifest, pullScope, type Descriptor } from './manifest.ts';
import { ociIndex } from './media-types.ts';

/**
 * Manifests whose `subject` is `digest` (signatures, SBOMs): the referrers
 * API, else the `<alg>-<hex>` tag the spec's fallback schema maintains
 * (distribution 2.8 has no referrers route: 404 text/plain; ghcr.io neither).
 * Filtered by artifactType here when the registry did not filter.
 */
export async function listReferrers(
  client: RegistryClient,
  repository: string,
  digest: string,
  options: { artifactType?: string; signal?: AbortSignal } = {},
): Promise<Descriptor[]> {
  const { algorithm, hex } = parseDigest(digest);
  const query = options.artifactType ? `?artifactType=${encodeURIComponent(options.artifactType)}` : '';
  const res = await client.send('GET', `/v2/${repository}/referrers/${digest}${query}`, {
    scopes: [pullScope(repository)],
    headers: { accept: ociIndex },
    signal: options.signal,
    accept: (s) => s === 200 || s === 404 || s === 400 || s === 405,
  });
  let descriptors: Descriptor[];
  let filtered = false;
  const contentType = header(res, 'content-type') ?? '';
  if (res.status === 200 && contentType.startsWith(ociIndex)) {
    const raw = Buffer.from(await res.body.arrayBuffer());
    const index = parseManifest(raw, contentType, `referrers of ${digest}`);
    descriptors = index.kind === 'index' ? index.manifests : [];
    filtered = (header(res, 'oci-filters-applied') ?? '')
      .split(',')
      .map((s) => s.trim())
      .includes('artifactType');
  } else {
    await res.body.dump();
    const tag = `${algorithm}-${hex}`;
    try {
      const fallback = await fetchManifest(client, repository, tag, options.signal);
      descriptors = fallback.manifest.kind === 'index' ? fallback.manifest.manifests : [];
    } catch (err) {
      if (err instanceof Error && 'code' in err && err.code === 'oci.not-found') return [];
      throw err;
    }
  }
  if (options.artifactType && !filtered) descriptors = descriptors.filter((d) => d.artifactType === options.artifactType);
  return descriptors;
}
