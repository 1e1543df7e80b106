import type { DiskPackaging } from '../disk-source.ts';
import { OciError } from '../errors.ts';
import type { Descriptor, ImageManifest } from '../manifest.ts';
import {
  diskFormats,
  diskImagePrefix,
  isImageConfig,
  parseDiskMediaType,
  tarLayerCompression,
  titleAnnotation,
  vmImageArtifact,
  type Compression,
} from '../media-types.ts';
import { detectKubevirtDisk, isKubevirtExport } from './kubevirt.ts';
import { vmimage } from './vmimage-annotations.ts';

/**
 * Which packaging a manifest is and which layer holds the disk, from the
 * manifest alone (the bytes confirm it later: sniff.ts). First rule that
 * matches (oci-pipeline.md §3.4):
 *  1. artifactType application/vnd.kupenstack.vmimage.v1 → its one diskimage layer
 *  2. exactly one application/vnd.diskimage.* layer → that layer
 *  3. a KubeVirt VM export (artifactType application/vnd.kubevirt.virtualmachine.v1) → its raw+zstd disk layer, by name (kubevirt.ts)
 *  4. a container image config → containerDisk (disk/<file> in the tar layers)
 *  5. otherwise one layer (or one disk-named layer) → a plain `oras push` of a file
 */

export interface DetectedDisk {
  packaging: DiskPackaging;
  /** The layer with the disk; for a containerDisk the topmost layer. */
  layer: Descriptor;
  /** containerDisk: every layer, topmost first (the disk is the first disk/<file> found). */
  tarLayers?: Descriptor[];
  /** Format the manifest states (media type, annotation or file extension); absent when only the bytes can tell. */
  declaredFormat?: string;
  compression?: Compression;
  /** KubeVirt export: the chosen disk's name, its raw size when stated, and how many disks the VM has. */
  kubevirt?: { name: string; size?: number; diskCount: number };
}

const extensionFormats: Record<string, string> = { qcow2: 'qcow2', raw: 'raw', vmdk: 'vmdk', vhd: 'vhd', vhdx: 'vhdx', vdi: 'vdi', iso: 'iso' };
const diskNameRe = /\.(qcow2|img|raw|iso|vmdk|vhdx?|vdi)(\.(gz|zst))?$/i;

/** `cirros.qcow2.gz` → qcow2 + gzip; `disk.img` → no format (raw or qcow2: the bytes tell). */
export function formatFromFileName(name: string): { format?: string; compression?: Compression } {
  const m = diskNameRe.exec(name);
  if (!m) return {};
  const ext = m[1]!.toLowerCase();
  const format = extensionFormats[ext];
  const compression: Compression | undefined = m[3] === 'gz' ? 'gzip' : m[3] === 'zst' ? 'zstd' : undefined;
  return { ...(format ? { format } : {}), ...(compression ? { compression } : {}) };
}

function checkFormatName(format: string, where: string): void {
  if (!diskFormats.has(format)) {
    throw new OciError('oci.format', `${where}: disk format "${format}" is not one KupenStack imports (${[...diskFormats].join(', ')})`);
  }
}

/** Rule 3: a KubeVirt VM export's disk, raw and zstd-compressed by definition. */
function kubevirtExport(manifest: ImageManifest, where: string, disk: string | undefined): DetectedDisk {
  const found = detectKubevirtDisk(manifest, where, disk);
  return {
    packaging: 'kubevirt-export',
    layer: found.layer,
    declaredFormat: 'raw',
    compression: 'zstd',
    kubevirt: { name: found.name, ...(found.size !== undefined ? { size: found.size } : {}), diskCount: found.diskCount },
  };
}

/** `disk` names one disk of a KubeVirt VM export; any other artifact has one disk and refuses a name. */
export function detectDisk(manifest: ImageManifest, where: string, disk?: string): DetectedDisk {
  if (isKubevirtExport(manifest)) return kubevirtExport(manifest, where, disk);
  if (disk !== undefined)
    throw new OciError(
      'oci.format',
      `${where} is not a KubeVirt VM export, so it has no named disks; leave out the disk name ("${disk}") to import its one disk`,
    );
  const diskLayers = manifest.layers.filter((l) => l.mediaType.startsWith(diskImagePrefix));
  if (diskLayers.length > 1) {
    throw new OciError(
      'oci.format',
      `${where} has ${diskLayers.length} application/vnd.diskimage.* layers; a VM image has exactly one disk — push one disk per manifest (an index for several architectures)`,
    );
  }
  const ours = manifest.artifactType === vmImageArtifact;
  if (ours && diskLayers.length === 0) {
    throw new OciError(
      'oci.format',
      `${where} says it is a ${vmImageArtifact} but has no application/vnd.diskimage.* layer; push the disk with a media type like application/vnd.diskimage.qcow2`,
    );
  }
  if (diskLayers.length === 1) {
    const layer = diskLayers[0]!;
    const parsed = parseDiskMediaType(layer.mediaType)!;
    checkFormatName(parsed.format, where);
    const annotated = manifest.annotations[vmimage.diskFormat];
    if (annotated !== undefined && annotated !== parsed.format) {
      throw new OciError(
        'oci.format-mismatch',
        `${where}: the layer media type says ${parsed.format} but ${vmimage.diskFormat} says ${annotated}; make them agree`,
      );
    }
    return {
      packaging: ours ? 'kupenstack-artifact' : 'diskimage-artifact',
      layer,
      declaredFormat: parsed.format,
      ...(parsed.compression ? { compression: parsed.compression } : {}),
    };
  }
  if (isImageConfig(manifest.config.mediaType)) {
    if (manifest.layers.length === 0)
      throw new OciError('oci.format', `${where} is a container image without layers; a containerDisk has its disk under disk/ in a layer`);
    for (const l of manifest.layers) {
      if (tarLayerCompression(l.mediaType) === undefined) {
        throw new OciError(
          'oci.format',
          `${where} is a container image with a layer of type ${l.mediaType}; a containerDisk's layers are tar, tar+gzip or tar+zstd`,
        );
      }
    }
    const tarLayers = [...manifest.layers].reverse();
    return { packaging: 'containerdisk', layer: tarLayers[0]!, tarLayers };
  }
  // A plain `oras push` of a file: one layer, or one layer whose title names a disk.
  let candidates = manifest.layers;
  if (candidates.length > 1) candidates = candidates.filter((l) => diskNameRe.test(l.annotations?.[titleAnnotation] ?? ''));
  if (candidates.length !== 1) {
    throw new OciError(
      'oci.format',
      candidates.length === 0
        ? `${where} holds no VM disk: no application/vnd.diskimage.* layer, not a container image, and no single layer titled like a disk file (.qcow2, .img, .raw, .iso, .vmdk, .vhd, .vhdx, .vdi)`
        : `${where} holds ${candidates.length} layers that could be the disk; push exactly one disk (media type application/vnd.diskimage.<format>)`,
    );
  }
  const layer = candidates[0]!;
  if (layer.annotations?.['io.deis.oras.content.unpack'] === 'true') {
    throw new OciError(
      'oci.format',
      `${where}: the layer is a directory oras packed as tar+gzip; push the disk file itself (oras push REF disk.qcow2:application/vnd.diskimage.qcow2)`,
    );
  }
  const title = layer.annotations?.[titleAnnotation] ?? '';
  const byName = formatFromFileName(title);
  const layerCompression = /[.+]gzip$/.test(layer.mediaType) ? 'gzip' : /[.+]zstd$/.test(layer.mediaType) ? 'zstd' : undefined;
  const compression = byName.compression ?? layerCompression;
  return { packaging: 'oras-file', layer, ...(byName.format ? { declaredFormat: byName.format } : {}), ...(compression ? { compression } : {}) };
}
