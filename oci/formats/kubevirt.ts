import { OciError } from '../errors.ts';
import type { Descriptor, ImageManifest } from '../manifest.ts';

/**
 * KubeVirt's OCI VM export (VEP #256, `virtctl vmexport download --format=oci`;
 * the constants of kubevirt/kubevirt pkg/storage/oci): an index and a manifest
 * with artifactType virtualmachine.v1 (or virtualmachinetemplate.v1), the VM
 * (or template) object as the config blob, and one raw+zstd layer per
 * PVC-backed disk — the blob is the compressed disk itself, not a tar. Each
 * layer names its volume (`io.kubevirt.disk.name`) and the raw disk's size
 * as a Kubernetes quantity (`io.kubevirt.disk.size`, e.g. `10Gi` or `1536`).
 */

export const kubevirt = {
  vmArtifact: 'application/vnd.kubevirt.virtualmachine.v1',
  templateArtifact: 'application/vnd.kubevirt.virtualmachinetemplate.v1',
  vmConfig: 'application/vnd.kubevirt.virtualmachine.config.v1+json',
  templateConfig: 'application/vnd.kubevirt.virtualmachinetemplate.config.v1+json',
  diskRawZstd: 'application/vnd.kubevirt.disk.raw+zstd',
  diskName: 'io.kubevirt.disk.name',
  diskSize: 'io.kubevirt.disk.size',
} as const;

/** True for a VM or VM-template export (by artifactType, else by the config media type: some copiers drop artifactType). */
export function isKubevirtExport(manifest: ImageManifest): boolean {
  const t = manifest.artifactType;
  if (t === kubevirt.vmArtifact || t === kubevirt.templateArtifact) return true;
  return manifest.config.mediaType === kubevirt.vmConfig || manifest.config.mediaType === kubevirt.templateConfig;
}

const binarySuffix: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const decimalSuffix: Record<string, number> = { k: 1, M: 2, G: 3, T: 4, P: 5, E: 6 };

/**
 * A Kubernetes quantity of bytes (`10Gi`, `1536`, `2G`, `1e9`) as a whole
 * number; undefined when it is not one (a fraction, a milli, garbage).
 * KubeVirt writes `resource.NewQuantity(size, BinarySI).String()`: the
 * largest binary suffix that divides the size, else the plain number.
 */
export function parseByteQuantity(text: string): number | undefined {
  const m = /^(\d{1,19})(?:(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)|[eE](\d{1,2}))?$/.exec(text);
  if (!m) return undefined;
  let n = BigInt(m[1]!);
  const suffix = m[2];
  if (suffix !== undefined) n *= binarySuffix[suffix] !== undefined ? 1024n ** BigInt(binarySuffix[suffix]) : 1000n ** BigInt(decimalSuffix[suffix]!);
  else if (m[3] !== undefined) n *= 10n ** BigInt(m[3]);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : undefined;
}

export interface KubevirtDisk {
  layer: Descriptor;
  /** io.kubevirt.disk.name of the chosen layer. */
  name: string;
  /** The raw disk's size in bytes (io.kubevirt.disk.size), when the layer states it. */
  size?: number;
  /** How many disk layers the artifact has (several: the name chose one). */
  diskCount: number;
}

function diskNames(layers: readonly Descriptor[]): string[] {
  return layers.map((l, i) => l.annotations?.[kubevirt.diskName] ?? `(layer ${i} has no ${kubevirt.diskName})`);
}

/** The disk layers of a KubeVirt export, every one checked: only raw+zstd, each named once. */
function diskLayers(manifest: ImageManifest, where: string): Descriptor[] {
  const layers = manifest.layers.filter((l) => l.mediaType.startsWith('application/vnd.kubevirt.disk.'));
  for (const l of layers) {
    if (l.mediaType !== kubevirt.diskRawZstd)
      throw new OciError(
        'oci.format',
        `${where}: KubeVirt disk layer type ${l.mediaType} is not one KupenStack imports (${kubevirt.diskRawZstd} only); export the VM again with a KubeVirt that writes raw+zstd`,
      );
  }
  const names = diskNames(layers);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new OciError('oci.format', `${where}: two disk layers are named "${twice}" (${kubevirt.diskName}); the export is damaged`);
  return layers;
}

/**
 * Rule 3 of oci-pipeline.md §3.4: the disk layer of a KubeVirt VM export.
 * One disk: that one (a `disk` given must name it). Several: `disk` must
 * name one; without it the refusal lists the names and says where to write one.
 */
export function detectKubevirtDisk(manifest: ImageManifest, where: string, disk: string | undefined): KubevirtDisk {
  const layers = diskLayers(manifest, where);
  const names = diskNames(layers);
  if (layers.length === 0)
    throw new OciError(
      'oci.format',
      `${where} is a KubeVirt VM export without a disk layer (${kubevirt.diskRawZstd}): its volumes are not PVCs (containerDisk, cloud-init); import the containerDisk image itself`,
    );
  let index = 0;
  if (disk !== undefined) {
    index = names.indexOf(disk);
    if (index < 0) throw new OciError('oci.format', `${where} has no disk named "${disk}"; its disks are ${names.map((n) => `"${n}"`).join(', ')}`);
  } else if (layers.length > 1) {
    throw new OciError(
      'oci.format',
      `${where} is a KubeVirt VM with ${layers.length} disks (${names.map((n) => `"${n}"`).join(', ')}); a Glance image holds one: choose it with spec.source.oci.disk (or --disk) set to one of these names`,
    );
  }
  const layer = layers[index]!;
  const name = layer.annotations?.[kubevirt.diskName] ?? '';
  const sizeText = layer.annotations?.[kubevirt.diskSize];
  let size: number | undefined;
  if (sizeText !== undefined) {
    size = parseByteQuantity(sizeText);
    if (size === undefined)
      throw new OciError(
        'oci.format',
        `${where}: disk "${name}" has ${kubevirt.diskSize}="${sizeText}", which is not a whole number of bytes (e.g. 10Gi or 1536)`,
      );
  }
  return { layer, name, ...(size !== undefined ? { size } : {}), diskCount: layers.length };
}

/** Bytes as KubeVirt's exporter writes io.kubevirt.disk.size: the largest binary suffix that divides them (`10Gi`), else the number. */
export function formatByteQuantity(bytes: number): string {
  const suffixes = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'];
  let n = BigInt(bytes);
  if (n === 0n) return '0';
  let power = 6;
  for (const suffix of suffixes) {
    const unit = 1024n ** BigInt(power--);
    if (n % unit === 0n) {
      n /= unit;
      return `${n}${suffix}`;
    }
  }
  return String(bytes);
}
