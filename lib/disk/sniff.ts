import { KupenstackError } from '../errors.ts';

/**
 * What a disk's first bytes show. Neither OCI nor Glance: the Image kind's
 * URL upload and the OCI pipeline (oci/sniff-gate.ts, the pre-flight) both
 * use it.
 */

export const sniffBytes = 64 * 1024;

/**
 * The disk format the first bytes show (qcow2, vmdk, vhdx, vhd, vdi, iso,
 * else raw). Compressed payloads and qcow2 files that point outside
 * themselves (backing file, external data file) are refused: Glance would
 * store them and Nova would follow the pointer on the compute host.
 */
export function sniffDiskFormat(head: Buffer): string {
  const at = (offset: number, magic: string): boolean =>
    head.length >= offset + magic.length && head.subarray(offset, offset + magic.length).toString('latin1') === magic;
  if (at(0, 'QFI\xfb')) {
    if (head.length >= 16 && head.readBigUInt64BE(8) !== 0n)
      throw new KupenstackError('image.unsafe', 'the qcow2 disk names a backing file; KupenStack refuses disks that read data from outside themselves');
    if (head.length >= 80 && head.readUInt32BE(4) >= 3 && (head.readBigUInt64BE(72) & 4n) !== 0n)
      throw new KupenstackError('image.unsafe', 'the qcow2 disk uses an external data file; KupenStack refuses disks that read data from outside themselves');
    return 'qcow2';
  }
  if (at(0, 'KDMV') || at(0, '# Disk DescriptorFile')) return 'vmdk';
  if (at(0, 'vhdxfile')) return 'vhdx';
  if (at(0, 'conectix')) return 'vhd';
  if (head.length >= 68 && head.readUInt32LE(64) === 0xbeda107f) return 'vdi';
  if (at(0x8001, 'CD001')) return 'iso';
  if (at(0, '\x1f\x8b') || at(0, '\x28\xb5\x2f\xfd') || at(0, '\xfd7zXZ\x00') || at(0, 'BZh')) {
    throw new KupenstackError(
      'image.compressed',
      'the disk is compressed (gzip, zstd, xz or bzip2); Glance stores disks as they are: publish the uncompressed disk',
    );
  }
  return 'raw';
}

/** Formats whose content cannot be recognised: any bytes sniff as raw. */
const opaqueFormats = new Set(['raw', 'vhd', 'ami', 'ari', 'aki', 'ploop']);

/** Whether bytes that sniff as `sniffed` may be stored as `declared`. */
export function formatsAgree(declared: string, sniffed: string): boolean {
  return sniffed === 'raw' ? opaqueFormats.has(declared) : sniffed === declared;
}

/** A declared format the content contradicts: refused, Glance would boot the wrong thing. */
export function checkDeclaredFormat(declared: string, sniffed: string): void {
  if (!formatsAgree(declared, sniffed)) {
    throw new KupenstackError(
      'image.format-mismatch',
      `spec.diskFormat is ${declared} but the disk's content is ${sniffed}; fix diskFormat (or leave it out to use what the content shows)`,
    );
  }
}

/** The virtual size a qcow2 header states (bytes), if the head is a qcow2 header. */
export function qcow2VirtualSize(head: Buffer): number | undefined {
  if (head.length < 32 || head.subarray(0, 4).toString('latin1') !== 'QFI\xfb') return undefined;
  return Number(head.readBigUInt64BE(24));
}
