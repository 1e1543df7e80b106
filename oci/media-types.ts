/** Media types the registry side reads and writes (OCI image-spec 1.1, Docker distribution). */

export const ociManifest = 'application/vnd.oci.image.manifest.v1+json';
export const ociIndex = 'application/vnd.oci.image.index.v1+json';
const dockerManifest = 'application/vnd.docker.distribution.manifest.v2+json';
const dockerManifestList = 'application/vnd.docker.distribution.manifest.list.v2+json';

/**
 * Always all four: distribution 2.8 answers 404 for a type missing from
 * Accept and down-converts a Docker schema2 manifest to schema1 (another
 * digest) when only OCI types are listed.
 */
export const manifestAccept = [ociManifest, ociIndex, dockerManifest, dockerManifestList].join(', ');

export const ociEmpty = 'application/vnd.oci.empty.v1+json';
/** The empty descriptor's blob `{}`. */
export const emptyDigest = 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a';
const ociImageConfig = 'application/vnd.oci.image.config.v1+json';
const dockerImageConfig = 'application/vnd.docker.container.image.v1+json';

/** artifactType of our disk artifact. */
export const vmImageArtifact = 'application/vnd.kupenstack.vmimage.v1';
export const diskImagePrefix = 'application/vnd.diskimage.';

export const titleAnnotation = 'org.opencontainers.image.title';
export const createdAnnotation = 'org.opencontainers.image.created';

export type Compression = 'gzip' | 'zstd';

export function isIndex(mediaType: string): boolean {
  return mediaType === ociIndex || mediaType === dockerManifestList;
}

export function isImageManifest(mediaType: string): boolean {
  return mediaType === ociManifest || mediaType === dockerManifest;
}

export function isImageConfig(mediaType: string): boolean {
  return mediaType === ociImageConfig || mediaType === dockerImageConfig;
}

/** Disk formats a `application/vnd.diskimage.<format>` layer may name (Glance disk_format values). */
export const diskFormats = new Set(['qcow2', 'raw', 'vmdk', 'vhd', 'vhdx', 'vdi', 'iso']);

/** `application/vnd.diskimage.qcow2` → qcow2; `…raw.gzip` (Konflux) or `…raw+zstd` → raw + compression. */
export function parseDiskMediaType(mediaType: string): { format: string; compression?: Compression } | undefined {
  if (!mediaType.startsWith(diskImagePrefix)) return undefined;
  const m = /^([a-z0-9]+)(?:[.+](gzip|zstd))?$/.exec(mediaType.slice(diskImagePrefix.length));
  if (!m) return { format: mediaType.slice(diskImagePrefix.length) };
  const format = m[1]!;
  return m[2] ? { format, compression: m[2] as Compression } : { format };
}

export function diskMediaType(format: string, compression?: Compression): string {
  return `${diskImagePrefix}${format}${compression ? `.${compression}` : ''}`;
}

/** Tar layer media types of container images and how each is compressed. */
export function tarLayerCompression(mediaType: string): Compression | 'none' | undefined {
  switch (mediaType) {
    case 'application/vnd.oci.image.layer.v1.tar':
    case 'application/vnd.oci.image.layer.nondistributable.v1.tar':
    case 'application/vnd.docker.image.rootfs.diff.tar':
      return 'none';
    case 'application/vnd.oci.image.layer.v1.tar+gzip':
    case 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip':
    case 'application/vnd.docker.image.rootfs.diff.tar.gzip':
      return 'gzip';
    case 'application/vnd.oci.image.layer.v1.tar+zstd':
    case 'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd':
      return 'zstd';
    default:
      return undefined;
  }
}
