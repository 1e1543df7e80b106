/**
 * The manifests artifact, as Flux's `flux push artifact` writes it (Flux
 * RFC-0003, since Flux 0.40): an OCI image manifest whose config has the
 * Flux config type and whose one layer is a tar.gz of the folder. What
 * `kupenstack push manifests` writes and the Sync's OCI source reads.
 */

export const fluxConfigMediaType = 'application/vnd.cncf.flux.config.v1+json';
export const fluxContentMediaType = 'application/vnd.cncf.flux.content.v1.tar+gzip';

/** Where the content came from (Flux sets the Git URL), and its source revision (`main@sha1:…`). */
export const sourceAnnotation = 'org.opencontainers.image.source';
export const revisionAnnotation = 'org.opencontainers.image.revision';

/**
 * The layer of a manifests artifact: Flux's content type, else (Flux's
 * source-controller accepts these too) the only tar+gzip layer of any type.
 */
export function contentLayerIndex(layers: readonly { mediaType: string }[]): number {
  const flux = layers.findIndex((l) => l.mediaType === fluxContentMediaType);
  if (flux >= 0) return flux;
  const tars = layers.flatMap((l, i) => (/tar\+gzip$|tar\.gzip$/.test(l.mediaType) ? [i] : []));
  return tars.length === 1 ? tars[0]! : -1;
}
