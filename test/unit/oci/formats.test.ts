import { describe, expect, it } from 'vitest';
import { detectDisk, formatFromFileName } from '../../../oci/formats/detect.ts';
import { glanceMetadata, isAllowedProperty } from '../../../oci/formats/vmimage-annotations.ts';
import type { Descriptor, ImageIndex, ImageManifest } from '../../../oci/manifest.ts';
import { parseManifest } from '../../../oci/manifest.ts';
import { diskMediaType, parseDiskMediaType } from '../../../oci/media-types.ts';
import { parsePlatform, selectPlatform } from '../../../oci/platform.ts';

const digest = (c: string): string => `sha256:${c.repeat(64)}`;
const empty: Descriptor = { mediaType: 'application/vnd.oci.empty.v1+json', digest: digest('4'), size: 2 };
const layer = (mediaType: string, title?: string, c = 'a'): Descriptor => ({ mediaType, digest: digest(c), size: 10, ...(title ? { annotations: { 'org.opencontainers.image.title': title } } : {}) });
const manifest = (layers: Descriptor[], extra: Partial<ImageManifest> = {}): ImageManifest => ({ kind: 'manifest', mediaType: 'application/vnd.oci.image.manifest.v1+json', config: empty, layers, annotations: {}, ...extra });

describe('disk media types', () => {
  it('reads format and compression (Konflux .gzip and +zstd spellings)', () => {
    expect(parseDiskMediaType('application/vnd.diskimage.qcow2')).toEqual({ format: 'qcow2' });
    expect(parseDiskMediaType('application/vnd.diskimage.raw.gzip')).toEqual({ format: 'raw', compression: 'gzip' });
    expect(parseDiskMediaType('application/vnd.diskimage.raw+zstd')).toEqual({ format: 'raw', compression: 'zstd' });
    expect(parseDiskMediaType('application/octet-stream')).toBeUndefined();
    expect(diskMediaType('raw', 'zstd')).toBe('application/vnd.diskimage.raw.zstd');
  });

  it('reads formats from file names; .img says nothing', () => {
    expect(formatFromFileName('cirros-0.6.2-x86_64-disk.qcow2')).toEqual({ format: 'qcow2' });
    expect(formatFromFileName('disk.raw.gz')).toEqual({ format: 'raw', compression: 'gzip' });
    expect(formatFromFileName('disk.img')).toEqual({});
    expect(formatFromFileName('README.md')).toEqual({});
  });
});

describe('format detection', () => {
  it('1. our artifact: artifactType + one diskimage layer; other layers ignored', () => {
    const d = detectDisk(manifest([layer('text/markdown', 'README.md', 'b'), layer('application/vnd.diskimage.qcow2', 'd.qcow2')], { artifactType: 'application/vnd.kupenstack.vmimage.v1' }), 'x');
    expect(d).toMatchObject({ packaging: 'kupenstack-artifact', declaredFormat: 'qcow2', layer: { digest: digest('a') } });
  });

  it('1. our artifactType without a disk layer is refused', () => {
    expect(() => detectDisk(manifest([layer('application/octet-stream', 'd.qcow2')], { artifactType: 'application/vnd.kupenstack.vmimage.v1' }), 'x')).toThrow(/no application\/vnd.diskimage/);
  });

  it('2. any manifest with one diskimage layer (Konflux, podman)', () => {
    expect(detectDisk(manifest([layer('application/vnd.diskimage.raw.gzip')], { artifactType: 'application/vnd.diskimage.raw.gzip' }), 'x')).toMatchObject({ packaging: 'diskimage-artifact', declaredFormat: 'raw', compression: 'gzip' });
  });

  it('refuses two disk layers, unknown disk formats, and annotation/layer disagreement', () => {
    expect(() => detectDisk(manifest([layer('application/vnd.diskimage.qcow2', 'a.qcow2', 'a'), layer('application/vnd.diskimage.raw', 'b.raw', 'b')]), 'x')).toThrow(/2 application\/vnd.diskimage/);
    expect(() => detectDisk(manifest([layer('application/vnd.diskimage.floppy')]), 'x')).toThrow(/not one KupenStack imports/);
    try {
      detectDisk(manifest([layer('application/vnd.diskimage.qcow2')], { annotations: { 'io.kupenstack.vmimage.disk.format': 'raw' } }), 'x');
      expect.unreachable();
    } catch (err) {
      expect((err as { code: string }).code).toBe('oci.format-mismatch');
    }
  });

  it('3. container image config → containerDisk, layers topmost first', () => {
    const m = manifest([layer('application/vnd.oci.image.layer.v1.tar+gzip', undefined, 'a'), layer('application/vnd.oci.image.layer.v1.tar', undefined, 'b')], {
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: digest('c'), size: 100 },
    });
    const d = detectDisk(m, 'x');
    expect(d.packaging).toBe('containerdisk');
    expect(d.tarLayers!.map((l) => l.digest)).toEqual([digest('b'), digest('a')]);
    expect(d.declaredFormat).toBeUndefined();
  });

  it('4. plain oras push of a file: one titled layer; the title may name the format', () => {
    const m = manifest([layer('application/vnd.oci.image.layer.v1.tar', 'cirros.qcow2')], { artifactType: 'application/vnd.unknown.artifact.v1' });
    expect(detectDisk(m, 'x')).toMatchObject({ packaging: 'oras-file', declaredFormat: 'qcow2' });
    expect(detectDisk(manifest([layer('application/octet-stream', 'disk.img')]), 'x').declaredFormat).toBeUndefined();
    expect(() => detectDisk(manifest([layer('a/b', 'x.txt', 'a'), layer('a/b', 'y.txt', 'b')]), 'x')).toThrow(/holds no VM disk/);
    const dir = layer('application/vnd.oci.image.layer.v1.tar+gzip', 'dir');
    dir.annotations!['io.deis.oras.content.unpack'] = 'true';
    expect(() => detectDisk(manifest([dir]), 'x')).toThrow(/directory/);
  });
});

describe('annotations → Glance', () => {
  it('maps the io.kupenstack.vmimage.* keys and allow-listed properties', () => {
    const meta = glanceMetadata({
      'io.kupenstack.vmimage.disk.format': 'qcow2',
      'io.kupenstack.vmimage.disk.virtual-size': String(3 * 1024 ** 3 + 1),
      'io.kupenstack.vmimage.architecture': 'x86_64',
      'io.kupenstack.vmimage.os.type': 'linux',
      'io.kupenstack.vmimage.os.distro': 'cirros',
      'io.kupenstack.vmimage.os.version': '0.6.2',
      'io.kupenstack.vmimage.min-disk-gb': '1',
      'io.kupenstack.vmimage.min-ram-mb': '128',
      'io.kupenstack.vmimage.property.hw_disk_bus': 'virtio',
      'io.kupenstack.vmimage.property.os_glance_import_method': 'x',
      'io.kupenstack.vmimage.property.img_signature': 'x',
      'io.kupenstack.vmimage.property.owner': 'someone',
      'org.opencontainers.image.version': '0.6.2',
      'com.example.other': 'ignored silently',
    });
    expect(meta.properties).toEqual({ architecture: 'x86_64', os_type: 'linux', os_distro: 'cirros', os_version: '0.6.2', hw_disk_bus: 'virtio', 'org.opencontainers.image.version': '0.6.2' });
    expect(meta.declaredFormat).toBe('qcow2');
    expect(meta.minDisk).toBe(4); // max(1, ceil(3 GiB + 1 byte))
    expect(meta.minRam).toBe(128);
    expect(meta.ignored.sort()).toEqual(['io.kupenstack.vmimage.property.img_signature', 'io.kupenstack.vmimage.property.os_glance_import_method', 'io.kupenstack.vmimage.property.owner']);
  });

  it('takes the architecture from the platform when the annotations do not say', () => {
    expect(glanceMetadata({}, 'arm64').properties.architecture).toBe('aarch64');
    expect(glanceMetadata({ 'io.kupenstack.vmimage.architecture': 's390x' }, 'amd64').properties.architecture).toBe('s390x');
  });

  it('refuses numbers that are not numbers', () => {
    expect(() => glanceMetadata({ 'io.kupenstack.vmimage.min-ram-mb': '1e3' })).toThrow(/not a whole number/);
  });

  it('allow-list', () => {
    for (const k of ['hw_scsi_model', 'hw_qemu_guest_agent', 'os_require_quiesce', 'img_config_drive', 'hypervisor_type', 'trait:CUSTOM_X']) expect(isAllowedProperty(k)).toBe(true);
    for (const k of ['os_glance_x', 'img_signature_hash_method', 'os_hash_value', 'os_hidden', 'owner', 'locations', 'id', 'status', 'oci_manifest_digest', 'Bad Key']) expect(isAllowedProperty(k)).toBe(false);
  });
});

describe('platform selection', () => {
  const entry = (arch: string, c: string, extra: Partial<Descriptor> = {}): Descriptor => ({ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest(c), size: 1, platform: { os: 'linux', architecture: arch }, ...extra });
  const index = (manifests: Descriptor[]): ImageIndex => ({ kind: 'index', mediaType: 'application/vnd.oci.image.index.v1+json', manifests, annotations: {} });

  it('picks the requested architecture, accepting Glance names', () => {
    const i = index([entry('amd64', 'a'), entry('arm64', 'b')]);
    expect(selectPlatform(i, parsePlatform('linux/arm64'), 'x').digest).toBe(digest('b'));
    expect(selectPlatform(i, parsePlatform('aarch64'), 'x').digest).toBe(digest('b'));
    expect(selectPlatform(i, { os: 'linux', architecture: 'amd64' }, 'x').digest).toBe(digest('a'));
  });

  it('skips attestation manifests and names what exists when nothing matches', () => {
    const att = entry('unknown', 'c', { platform: { os: 'unknown', architecture: 'unknown' }, annotations: { 'vnd.docker.reference.type': 'attestation-manifest' } });
    const i = index([entry('amd64', 'a'), att]);
    expect(() => selectPlatform(i, parsePlatform('linux/s390x'), 'x')).toThrow(/without linux\/s390x \(it has: linux\/amd64\)/);
  });

  it('prefers the exact variant', () => {
    const i = index([entry('arm', 'a', { platform: { os: 'linux', architecture: 'arm', variant: 'v6' } }), entry('arm', 'b', { platform: { os: 'linux', architecture: 'arm', variant: 'v7' } })]);
    expect(selectPlatform(i, parsePlatform('linux/arm/v7'), 'x').digest).toBe(digest('b'));
  });
});

describe('manifest parsing', () => {
  it('takes the type from the body, else the shape', () => {
    const raw = Buffer.from(JSON.stringify({ schemaVersion: 2, manifests: [] }));
    expect(parseManifest(raw, undefined, 'x').kind).toBe('index');
    expect(() => parseManifest(Buffer.from('{"schemaVersion":1}'), undefined, 'x')).toThrow(/schemaVersion 1/);
    expect(() => parseManifest(Buffer.from(JSON.stringify({ schemaVersion: 2, config: empty, layers: [{ mediaType: 'a', digest: 'sha256:zz', size: 1 }] })), undefined, 'x')).toThrow(/invalid digest/);
  });
});
