import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { OciError } from '../../../oci/errors.ts';
import { ExactSize } from '../../../oci/exact-size.ts';
import { detectDisk } from '../../../oci/formats/detect.ts';
import { formatByteQuantity, isKubevirtExport, kubevirt, parseByteQuantity } from '../../../oci/formats/kubevirt.ts';
import { minimalVirtualMachine, vmNameOf } from '../../../oci/kubevirt-push.ts';
import type { Descriptor, ImageManifest } from '../../../oci/manifest.ts';
import { creationProperties, sameDisk, versionKey, versionProperties } from '../../../agent/glance/version-rules.ts';
import type { ResolvedDisk } from '../../../oci/disk-source.ts';

const digest = (c: string): string => `sha256:${c.repeat(64)}`;
const vmConfig: Descriptor = { mediaType: kubevirt.vmConfig, digest: digest('c'), size: 900 };
const disk = (name: string | undefined, c: string, size?: string, mediaType: string = kubevirt.diskRawZstd): Descriptor => ({
  mediaType,
  digest: digest(c),
  size: 100,
  annotations: {
    ...(name !== undefined ? { [kubevirt.diskName]: name } : {}),
    ...(size !== undefined ? { [kubevirt.diskSize]: size } : {}),
    'org.opencontainers.image.title': `${name}.raw.zst`,
  },
});
const vm = (layers: Descriptor[], extra: Partial<ImageManifest> = {}): ImageManifest => ({
  kind: 'manifest',
  mediaType: 'application/vnd.oci.image.manifest.v1+json',
  artifactType: kubevirt.vmArtifact,
  config: vmConfig,
  layers,
  annotations: {},
  ...extra,
});

describe("KubeVirt's disk size annotation (a Kubernetes quantity)", () => {
  it('reads what resource.NewQuantity(n, BinarySI).String() writes, and decimal and exponent forms', () => {
    expect(parseByteQuantity('10Gi')).toBe(10 * 1024 ** 3);
    expect(parseByteQuantity('1536')).toBe(1536);
    expect(parseByteQuantity('64Mi')).toBe(64 * 1024 ** 2);
    expect(parseByteQuantity('3Ki')).toBe(3072);
    expect(parseByteQuantity('2G')).toBe(2e9);
    expect(parseByteQuantity('1e9')).toBe(1e9);
    expect(parseByteQuantity('0')).toBe(0);
  });

  it('refuses what is not a whole number of bytes', () => {
    for (const bad of ['1.5Gi', '100m', '-1', 'Gi', '10 Gi', '10gi', '', '9Ei9', '99999999Ei']) expect(parseByteQuantity(bad), bad).toBeUndefined();
  });

  it('writes the largest binary suffix that divides, else the number; parse reads it back', () => {
    expect(formatByteQuantity(10 * 1024 ** 3)).toBe('10Gi');
    expect(formatByteQuantity(1536)).toBe('1536');
    expect(formatByteQuantity(1024 * 1024 * 3)).toBe('3Mi');
    expect(formatByteQuantity(0)).toBe('0');
    for (const n of [1, 1023, 1024, 4096 + 1, 64 * 1024 ** 2, 5 * 1024 ** 4, 2 ** 52]) expect(parseByteQuantity(formatByteQuantity(n))).toBe(n);
  });
});

describe('rule 3: a KubeVirt VM export', () => {
  it('is recognised by artifactType (VM and template), or by the config type when a copier dropped artifactType', () => {
    expect(isKubevirtExport(vm([]))).toBe(true);
    expect(isKubevirtExport(vm([], { artifactType: kubevirt.templateArtifact, config: { ...vmConfig, mediaType: kubevirt.templateConfig } }))).toBe(true);
    const { artifactType: _dropped, ...untyped } = vm([]);
    expect(isKubevirtExport(untyped)).toBe(true);
    expect(isKubevirtExport({ ...untyped, config: { ...vmConfig, mediaType: 'application/vnd.oci.image.config.v1+json' } })).toBe(false);
  });

  it('one disk: raw, zstd, its name and size from the layer annotations', () => {
    const d = detectDisk(vm([disk('rootdisk', 'a', '64Mi')]), 'x');
    expect(d).toMatchObject({ packaging: 'kubevirt-export', declaredFormat: 'raw', compression: 'zstd', layer: { digest: digest('a') } });
    expect(d.kubevirt).toEqual({ name: 'rootdisk', size: 64 * 1024 ** 2, diskCount: 1 });
    // Named, the one disk is still found; a wrong name is refused with the names there are.
    expect(detectDisk(vm([disk('rootdisk', 'a')]), 'x', 'rootdisk').kubevirt).toEqual({ name: 'rootdisk', diskCount: 1 });
    expect(() => detectDisk(vm([disk('rootdisk', 'a')]), 'x', 'data')).toThrow(/has no disk named "data"; its disks are "rootdisk"/);
  });

  it('several disks: refused without a name (listing the names and the fix), the named one with it', () => {
    const m = vm([disk('rootdisk', 'a', '10Gi'), disk('datadisk', 'b', '1Gi')]);
    let err: unknown;
    try {
      detectDisk(m, 'reg/vm:1');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OciError);
    expect((err as OciError).code).toBe('oci.format');
    expect((err as OciError).message).toMatch(/2 disks \("rootdisk", "datadisk"\).*spec\.source\.oci\.disk \(or --disk\)/);
    const d = detectDisk(m, 'x', 'datadisk');
    expect(d.layer.digest).toBe(digest('b'));
    expect(d.kubevirt).toEqual({ name: 'datadisk', size: 1024 ** 3, diskCount: 2 });
  });

  it('refuses a damaged or foreign export: no disk layer, another disk layer type, a name twice, a size that is no quantity', () => {
    expect(() => detectDisk(vm([]), 'x')).toThrow(/without a disk layer/);
    expect(() => detectDisk(vm([disk('rootdisk', 'a', undefined, 'application/vnd.kubevirt.disk.qcow2+gzip')]), 'x')).toThrow(/not one KupenStack imports/);
    expect(() => detectDisk(vm([disk('d', 'a'), disk('d', 'b')]), 'x', 'd')).toThrow(/two disk layers are named "d"/);
    expect(() => detectDisk(vm([disk('rootdisk', 'a', '1.5Gi')]), 'x')).toThrow(/io\.kubevirt\.disk\.size="1\.5Gi"/);
  });

  it('ignores layers that are not disks (a README), and a disk name is refused for any other artifact', () => {
    const readme: Descriptor = { mediaType: 'text/markdown', digest: digest('d'), size: 5 };
    expect(detectDisk(vm([readme, disk('rootdisk', 'a')]), 'x').layer.digest).toBe(digest('a'));
    const ours: ImageManifest = {
      ...vm([{ mediaType: 'application/vnd.diskimage.qcow2', digest: digest('a'), size: 1 }]),
      artifactType: 'application/vnd.kupenstack.vmimage.v1',
      config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: digest('4'), size: 2 },
    };
    expect(detectDisk(ours, 'x').packaging).toBe('kupenstack-artifact');
    expect(() => detectDisk(ours, 'x', 'rootdisk')).toThrow(/not a KubeVirt VM export/);
  });
});

describe('the exact size of a decompressed KubeVirt disk', () => {
  const run = async (chunks: Buffer[], expected: number): Promise<{ out: number; error?: unknown }> => {
    let out = 0;
    const sink = new Writable({
      write(chunk: Buffer, _e, cb) {
        out += chunk.length;
        cb();
      },
    });
    try {
      await pipeline(Readable.from(chunks), new ExactSize(expected, 'disk'), sink);
      return { out };
    } catch (error) {
      return { out, error };
    }
  };

  it('passes exactly the stated size', async () => {
    expect(await run([Buffer.alloc(10), Buffer.alloc(6)], 16)).toEqual({ out: 16 });
  });

  it('fails a longer stream at the first byte too many, a shorter one at its end, never ending cleanly', async () => {
    const longer = await run([Buffer.alloc(10), Buffer.alloc(10), Buffer.alloc(10)], 15);
    expect((longer.error as OciError).code).toBe('oci.size-mismatch');
    expect(longer.out).toBe(10);
    const shorter = await run([Buffer.alloc(10)], 15);
    expect((shorter.error as OciError).code).toBe('oci.size-mismatch');
    expect((shorter.error as OciError).message).toMatch(/is 10 bytes, not the 15/);
  });
});

describe('Glance versions of a KubeVirt disk', () => {
  const resolved = (over: Partial<ResolvedDisk> = {}): ResolvedDisk => ({
    reference: `r/vm@${digest('1')}`,
    repository: 'r/vm',
    manifestDigest: digest('1'),
    packaging: 'kubevirt-export',
    diskFormat: 'raw',
    blob: { digest: digest('2'), size: 1, mediaType: kubevirt.diskRawZstd },
    annotations: {},
    properties: { oci_format: 'forged', oci_disk: 'forged' },
    diskName: 'datadisk',
    ...over,
  });

  it('each named disk of one manifest is its own version: the key and oci_disk carry the name, oci_format says kubevirt-export', () => {
    expect(versionKey(resolved())).toBe(`${digest('1')}#disk=datadisk`);
    expect(versionKey({ manifestDigest: digest('1') })).toBe(digest('1'));
    // Written once at creation (bookkeeping), never from annotations and never as drift.
    expect(versionProperties(resolved(), ['oci_*'], {})).toEqual({ oci_repository: 'r/vm', oci_manifest_digest: digest('1') });
    expect(creationProperties(resolved())).toEqual({ oci_format: 'kubevirt-export', oci_disk: 'datadisk' });
    expect(creationProperties(resolved({ diskName: undefined }))).toEqual({ oci_format: 'kubevirt-export' });
    expect(creationProperties({ packaging: 'containerdisk' })).toEqual({});
    expect(sameDisk({ id: 'a', status: 'active', oci_disk: 'datadisk' }, resolved())).toBe(true);
    expect(sameDisk({ id: 'a', status: 'active', oci_disk: 'rootdisk' }, resolved())).toBe(false);
    expect(sameDisk({ id: 'a', status: 'active' }, resolved())).toBe(false);
    expect(sameDisk({ id: 'a', status: 'active' }, {})).toBe(true);
  });
});

describe('the VirtualMachine an export writes', () => {
  it('names a DNS-1123 VM and one virtio disk backed by a claim of the disk name', () => {
    expect(vmNameOf('CirrOS 0.6.2 (x86_64)')).toBe('cirros-0-6-2-x86-64');
    expect(vmNameOf('---')).toBe('vm');
    expect(vmNameOf('a'.repeat(80))).toHaveLength(63);
    const doc = minimalVirtualMachine({ vmName: 'cirros', diskName: 'rootdisk', memoryMib: 128 }, 'amd64') as {
      spec: { template: { spec: Record<string, unknown> } };
    };
    expect(doc).toMatchObject({ apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name: 'cirros' }, spec: { runStrategy: 'Halted' } });
    expect(doc.spec.template.spec).toEqual({
      architecture: 'amd64',
      domain: { devices: { disks: [{ name: 'rootdisk', disk: { bus: 'virtio' } }] }, resources: { requests: { memory: '128Mi' } } },
      volumes: [{ name: 'rootdisk', persistentVolumeClaim: { claimName: 'rootdisk' } }],
    });
  });
});
