import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pack, type Header } from 'tar-stream';
import { describe, expect, it } from 'vitest';
import { diskFromTar, normalizeEntryPath, type TarDiskState } from '../../../oci/formats/containerdisk.ts';
import { checkDeclaredFormat, qcow2VirtualSize, sniffDiskFormat } from '../../../lib/disk/sniff.ts';

type Item = { header: Partial<Header> & Pick<Header, 'name'>; body?: Buffer };

async function tarOf(items: Item[]): Promise<Buffer> {
  const p = pack();
  for (const it of items) p.entry(it.header, it.body ?? Buffer.alloc(0));
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

async function extractDisk(tar: Buffer): Promise<{ data: Buffer; state: TarDiskState }> {
  const state: TarDiskState = {};
  const chunks: Buffer[] = [];
  for await (const c of diskFromTar(Readable.from([tar]), undefined, 'test layer', state)) chunks.push(c);
  return { data: Buffer.concat(chunks), state };
}

const disk = Buffer.concat([Buffer.from('QFI\xfb', 'latin1'), Buffer.alloc(1020)]);

describe('containerDisk tar layers', () => {
  it('finds disk/<file> (KubeVirt layout, ./ and / prefixes) among other entries', async () => {
    for (const name of ['disk/disk.img', './disk/disk.img', '/disk/disk.img']) {
      const tar = await tarOf([
        { header: { name: 'etc/', type: 'directory' } },
        { header: { name: 'etc/hostname', size: 3 }, body: Buffer.from('vm\n') },
        { header: { name: 'disk/', type: 'directory', uid: 107, gid: 107 } },
        { header: { name, size: disk.length, uid: 107, gid: 107, mode: 0o444 }, body: disk },
        { header: { name: 'zz-after', size: 4 }, body: Buffer.from('tail') },
      ]);
      const { data, state } = await extractDisk(tar);
      expect(data.equals(disk)).toBe(true);
      expect(state).toEqual({ entry: 'disk/disk.img', size: disk.length });
    }
  });

  it('honours long (pax / GNU) names', async () => {
    const long = `disk/${'x'.repeat(150)}.qcow2`;
    const { state } = await extractDisk(await tarOf([{ header: { name: long, size: disk.length }, body: disk }]));
    expect(state.entry).toBe(long);
  });

  it('yields nothing for a layer without a disk (the next layer is tried)', async () => {
    const { data, state } = await extractDisk(await tarOf([{ header: { name: 'disk2/x.img', size: 4 }, body: Buffer.from('abcd') }]));
    expect(data.length).toBe(0);
    expect(state.entry).toBeUndefined();
  });

  it('refuses a symlink or hard link as the disk', async () => {
    await expect(extractDisk(await tarOf([{ header: { name: 'disk/disk.img', type: 'symlink', linkname: '/etc/shadow' } }]))).rejects.toMatchObject({ code: 'oci.unsafe', message: expect.stringContaining('symlink') as unknown });
    await expect(
      extractDisk(await tarOf([{ header: { name: 'other', size: 4 }, body: Buffer.from('abcd') }, { header: { name: 'disk/disk.img', type: 'link', linkname: 'other' } }])),
    ).rejects.toMatchObject({ code: 'oci.unsafe', message: expect.stringContaining('hard link') as unknown });
    await expect(extractDisk(await tarOf([{ header: { name: 'disk', type: 'symlink', linkname: '/' } }]))).rejects.toMatchObject({ code: 'oci.unsafe' });
  });

  it('refuses path traversal anywhere in the layer', async () => {
    await expect(extractDisk(await tarOf([{ header: { name: '../../etc/cron.d/x', size: 1 }, body: Buffer.from('x') }, { header: { name: 'disk/d.img', size: disk.length }, body: disk }]))).rejects.toMatchObject({
      code: 'oci.unsafe',
      message: expect.stringContaining('climbs out') as unknown,
    });
    expect(normalizeEntryPath('disk/../../x')).toBeNull();
    expect(normalizeEntryPath('./disk/./a.img')).toBe('disk/a.img');
  });

  it('refuses two disk entries', async () => {
    await expect(extractDisk(await tarOf([{ header: { name: 'disk/a.img', size: disk.length }, body: disk }, { header: { name: 'disk/b.img', size: disk.length }, body: disk }]))).rejects.toMatchObject({ code: 'oci.format', message: expect.stringContaining('two disk files') as unknown });
  });

  it('fails on a tar cut short inside the disk entry', async () => {
    const tar = await tarOf([{ header: { name: 'disk/a.img', size: disk.length }, body: disk }]);
    await expect(extractDisk(tar.subarray(0, 700))).rejects.toThrow();
  });
});

describe('sniffing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kupenstack-sniff-'));
  const head = (file: string): Buffer => readFileSync(file).subarray(0, 65536);

  it('recognises a real qcow2 and its virtual size; refuses a backing file', () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', join(dir, 'base.qcow2'), '64M']);
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', join(dir, 'base.qcow2'), '-F', 'qcow2', join(dir, 'child.qcow2')]);
    expect(sniffDiskFormat(head(join(dir, 'base.qcow2')))).toBe('qcow2');
    expect(qcow2VirtualSize(head(join(dir, 'base.qcow2')))).toBe(64 * 1024 * 1024);
    expect(() => sniffDiskFormat(head(join(dir, 'child.qcow2')))).toThrow(/backing file/);
  });

  it('refuses an external data file and compressed payloads', () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-o', `data_file=${join(dir, 'data.raw')}`, join(dir, 'ext.qcow2'), '16M']);
    expect(() => sniffDiskFormat(head(join(dir, 'ext.qcow2')))).toThrow(/external data file/);
    expect(() => sniffDiskFormat(Buffer.from([0x1f, 0x8b, 8, 0]))).toThrow(/compressed/);
  });

  it('checks declared against sniffed (the URL image path and the OCI pipeline both import lib/disk/sniff.ts)', () => {
    expect(() => checkDeclaredFormat('qcow2', 'raw')).toThrow(/content is raw/);
    expect(() => checkDeclaredFormat('raw', 'raw')).not.toThrow();
  });
});
