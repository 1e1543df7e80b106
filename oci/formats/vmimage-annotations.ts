import { OciError } from '../errors.ts';
import { glanceArchitecture } from '../platform.ts';

/**
 * `io.kupenstack.vmimage.*` manifest annotations ↔ Glance fields. Annotation
 * values are strings and so are Glance property values: the mapping is 1:1.
 *
 * | annotation | Glance |
 * |---|---|
 * | io.kupenstack.vmimage.disk.format | disk_format (must equal the layer's media type and the sniffed bytes) |
 * | io.kupenstack.vmimage.disk.virtual-size | — (Glance computes virtual_size; used for min_disk) |
 * | io.kupenstack.vmimage.disk.uncompressed-size / -digest (layer) | — (verifies the decompressed stream) |
 * | io.kupenstack.vmimage.architecture | architecture (else from the index platform: amd64 → x86_64) |
 * | io.kupenstack.vmimage.os.type / os.distro / os.version | os_type / os_distro / os_version |
 * | io.kupenstack.vmimage.min-disk-gb / min-ram-mb | min_disk / min_ram (min_disk ≥ ceil(virtual-size / GiB)) |
 * | io.kupenstack.vmimage.property.<key> | <key>, allow-listed (hw_*, img_… except img_signature…, os_… except os_glance…, os_hash…, os_hidden) |
 * | org.opencontainers.image.{version,revision,source,created,description,licenses,vendor,title} | the same dotted key |
 */

export const vmimage = {
  prefix: 'io.kupenstack.vmimage.',
  diskFormat: 'io.kupenstack.vmimage.disk.format',
  virtualSize: 'io.kupenstack.vmimage.disk.virtual-size',
  uncompressedSize: 'io.kupenstack.vmimage.disk.uncompressed-size',
  uncompressedDigest: 'io.kupenstack.vmimage.disk.uncompressed-digest',
  architecture: 'io.kupenstack.vmimage.architecture',
  osType: 'io.kupenstack.vmimage.os.type',
  osDistro: 'io.kupenstack.vmimage.os.distro',
  osVersion: 'io.kupenstack.vmimage.os.version',
  minDisk: 'io.kupenstack.vmimage.min-disk-gb',
  minRam: 'io.kupenstack.vmimage.min-ram-mb',
  property: 'io.kupenstack.vmimage.property.',
} as const;

const direct: Record<string, string> = {
  [vmimage.architecture]: 'architecture',
  [vmimage.osType]: 'os_type',
  [vmimage.osDistro]: 'os_distro',
  [vmimage.osVersion]: 'os_version',
};

const copiedOci = ['version', 'revision', 'source', 'created', 'description', 'licenses', 'vendor', 'title'].map((k) => `org.opencontainers.image.${k}`);

const allowedExact = new Set([
  'hypervisor_type',
  'vm_mode',
  'auto_disk_config',
  'os_require_quiesce',
  'os_admin_user',
  'os_command_line',
  'os_secure_boot',
  'os_skip_agent_inject_ssh',
  'os_skip_agent_inject_files_at_boot',
  'img_config_drive',
  'kernel_id',
  'ramdisk_id',
  'description',
]);

/** Pass-through Glance properties an image may set for itself. Never core fields, signatures or Glance-reserved keys. */
export function isAllowedProperty(key: string): boolean {
  if (!/^[a-z][A-Za-z0-9_:.-]{0,254}$/.test(key)) return false;
  if (key.startsWith('os_glance') || key.startsWith('img_signature') || key.startsWith('os_hash') || key === 'os_hidden' || key.startsWith('oci_'))
    return false;
  return allowedExact.has(key) || key.startsWith('hw_') || key.startsWith('img_') || key.startsWith('trait:') || key.startsWith('os_');
}

export interface GlanceMetadata {
  properties: Record<string, string>;
  declaredFormat?: string;
  virtualSize?: number;
  minDisk?: number;
  minRam?: number;
  /** Annotations that looked like properties but are not allowed (reported, not applied). */
  ignored: string[];
}

function nonNegativeInt(annotations: Record<string, string>, key: string): number | undefined {
  const v = annotations[key];
  if (v === undefined) return undefined;
  if (!/^\d{1,18}$/.test(v)) throw new OciError('oci.format', `annotation ${key}="${v}" is not a whole number; fix the annotation`);
  return Number(v);
}

/** Glance fields from manifest annotations (+ the index platform's architecture when the annotations do not say). */
export function glanceMetadata(annotations: Record<string, string>, platformArchitecture?: string): GlanceMetadata {
  const properties: Record<string, string> = {};
  const ignored: string[] = [];
  for (const [key, value] of Object.entries(annotations)) {
    const mapped = direct[key];
    if (mapped) properties[mapped] = value;
    else if (key.startsWith(vmimage.property)) {
      const glanceKey = key.slice(vmimage.property.length);
      if (isAllowedProperty(glanceKey)) properties[glanceKey] = value;
      else ignored.push(key);
    } else if (copiedOci.includes(key)) properties[key] = value;
  }
  if (!properties.architecture && platformArchitecture) properties.architecture = glanceArchitecture(platformArchitecture);
  const out: GlanceMetadata = { properties, ignored };
  const declared = annotations[vmimage.diskFormat];
  if (declared !== undefined) out.declaredFormat = declared;
  const virtualSize = nonNegativeInt(annotations, vmimage.virtualSize);
  if (virtualSize !== undefined) out.virtualSize = virtualSize;
  let minDisk = nonNegativeInt(annotations, vmimage.minDisk);
  if (virtualSize !== undefined) minDisk = Math.max(minDisk ?? 0, Math.ceil(virtualSize / 1024 ** 3));
  if (minDisk !== undefined) out.minDisk = minDisk;
  const minRam = nonNegativeInt(annotations, vmimage.minRam);
  if (minRam !== undefined) out.minRam = minRam;
  return out;
}
