import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { pack, type Header } from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { unpackTarGz } from '../../../agent/source/oci-unpack.ts';
import { SourceError } from '../../../agent/source/source.ts';
import { packFolder } from '../../../oci/tar-pack.ts';

/*
 * The manifests artifact's content: `kupenstack push manifests` packs a
 * folder reproducibly (the same folder, written at another time and in
 * another order, gives the same bytes), and the Sync's OCI source unpacks a
 * layer only when nothing in it can write outside its folder or fill the disk.
 */
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

type Entry = Partial<Header> & { name: string; body?: string };

/** A tar.gz of hand-made entries (what a hostile or broken pusher could send). */
async function tarGz(entries: Entry[]): Promise<Buffer> {
  const tar = pack();
  const chunks: Buffer[] = [];
  tar.on('data', (c: unknown) => void chunks.push(c as Buffer));
  const ended = new Promise<void>((resolve) => tar.on('end', resolve));
  for (const { body, ...header } of entries) tar.entry({ type: 'file', mode: 0o644, ...header }, body ?? '');
  tar.finalize();
  await ended;
  return gzipSync(Buffer.concat(chunks));
}

/** Every path under `dir`, without following links (a link to `.` would loop). */
async function listTree(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
    const path = rel === '' ? e.name : `${rel}/${e.name}`;
    out.push(path);
    if (e.isDirectory()) out.push(...(await listTree(dir, path)));
  }
  return out.sort();
}

/** Unpacks into <root>/out; the refusal (a SourceError) or the files written. */
async function unpack(data: Buffer, limits?: { maxBytes: number; maxEntries: number }): Promise<{ root: string; error?: SourceError; files?: string[] }> {
  const root = await tempDir('ks-unpack-');
  const out = join(root, 'out');
  await mkdir(out);
  try {
    await unpackTarGz(Readable.from([data]), out, 'oci://127.0.0.1:5050/t@sha256:00', limits);
    return { root, files: await listTree(out) };
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
    return { root, error: err };
  }
}

describe('kupenstack push manifests: a reproducible tar.gz of the folder', () => {
  it('the same folder written twice, at other times and in another order, gives the same digest; a changed byte another', async () => {
    const a = await tempDir('ks-pack-a-');
    await mkdir(join(a, 'team-a'));
    await writeFile(join(a, 'team-a', 'net.yaml'), 'kind: Network\n');
    await writeFile(join(a, 'b.yaml'), 'kind: Flavor\n');
    await mkdir(join(a, '.git'));
    await writeFile(join(a, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    const b = await tempDir('ks-pack-b-');
    // Another order of creation and other times: neither may reach the bytes.
    await writeFile(join(b, 'b.yaml'), 'kind: Flavor\n');
    await mkdir(join(b, 'team-a'));
    await writeFile(join(b, 'team-a', 'net.yaml'), 'kind: Network\n');
    await utimes(join(b, 'b.yaml'), new Date('2001-01-01'), new Date('2001-01-01'));
    await utimes(join(b, 'team-a'), new Date('2002-02-02'), new Date('2002-02-02'));
    const pa = await packFolder(a);
    const pb = await packFolder(b);
    expect(pa.files).toEqual(['b.yaml', 'team-a/net.yaml']);
    expect(pb.digest).toBe(pa.digest);
    expect(pb.data.equals(pa.data)).toBe(true);
    await writeFile(join(b, 'b.yaml'), 'kind: Flavor \n');
    expect((await packFolder(b)).digest).not.toBe(pa.digest);
    // And what is packed unpacks to the same files, .git left out.
    const { files, error } = await unpack(pa.data);
    expect(error).toBeUndefined();
    expect(files).toEqual(['b.yaml', 'team-a', 'team-a/net.yaml']);
  });

  it('a symbolic link in the folder is refused with its path (its target would not travel)', async () => {
    const a = await tempDir('ks-pack-link-');
    await writeFile(join(a, 'net.yaml'), 'kind: Network\n');
    const { symlink } = await import('node:fs/promises');
    await symlink('/etc/passwd', join(a, 'secrets.yaml'));
    await expect(packFolder(a)).rejects.toThrow(`${join(a, 'secrets.yaml')} is a symbolic link`);
  });
});

describe('the OCI source unpacks a layer only when it stays in its folder', () => {
  it('files, folders and links inside unpack', async () => {
    const { files, error } = await unpack(await tarGz([{ name: './team-a/', type: 'directory' }, { name: './team-a/net.yaml', body: 'kind: Network\n' }, { name: 'alias', type: 'symlink', linkname: 'team-a' }]));
    expect(error).toBeUndefined();
    expect(files).toEqual(['alias', 'team-a', 'team-a/net.yaml']);
  });

  const refusals: { what: string; entries: Entry[]; message: RegExp }[] = [
    { what: 'an absolute name', entries: [{ name: '/tmp/ks-evil.yaml', body: 'x' }], message: /the entry "\/tmp\/ks-evil\.yaml" is an absolute path/ },
    { what: 'a name climbing out with ..', entries: [{ name: 'a/../../evil.yaml', body: 'x' }], message: /climbs out with "\.\."/ },
    { what: 'a link pointing outside', entries: [{ name: 'up', type: 'symlink', linkname: '../..' }], message: /the link up -> \.\.\/\.\. points outside the artifact/ },
    { what: 'a link leaving through another link', entries: [{ name: 'a', type: 'symlink', linkname: '.' }, { name: 'b', type: 'symlink', linkname: 'a/..' }], message: /the link b leads outside the artifact through another link/ },
    { what: 'a file written through a link', entries: [{ name: 'sub/', type: 'directory' }, { name: 'l', type: 'symlink', linkname: 'sub' }, { name: 'l/evil.yaml', body: 'x' }], message: /the entry l\/evil\.yaml is written through the link l/ },
    { what: 'a hard link', entries: [{ name: 'a.yaml', body: 'x' }, { name: 'h', type: 'link', linkname: 'a.yaml' }], message: /the entry h is a link/ },
    { what: 'a second entry of the same name', entries: [{ name: 'a.yaml', body: 'x' }, { name: 'a.yaml', body: 'y' }], message: /EEXIST|exists/ },
  ];
  for (const r of refusals) {
    it(`${r.what}: the artifact is refused naming the entry, nothing written outside`, async () => {
      const { root, error } = await unpack(await tarGz(r.entries));
      try {
        expect(error?.failure).toBe('artifact');
        expect(error?.message).toMatch(r.message);
        expect(error?.message).toContain('oci://127.0.0.1:5050/t@sha256:00');
        expect((await readdir(root)).sort()).toEqual(['out']);
        expect(existsSync('/tmp/ks-evil.yaml')).toBe(false);
      } finally {
        // Gone before the harness's afterEach walks TMPDIR: it follows links, and `a -> .` is a loop.
        await rm(root, { recursive: true, force: true });
      }
    });
  }

  it('more bytes or more entries than the limits: refused before they are all written', async () => {
    const big = await tarGz([{ name: 'big.yaml', body: 'x'.repeat(200_000) }]);
    const bytes = await unpack(big, { maxBytes: 100_000, maxEntries: 10 });
    expect(bytes.error?.message).toMatch(/it unpacks to more than 100000 bytes; the artifact is refused/);
    const many = await tarGz(Array.from({ length: 12 }, (_, i) => ({ name: `f${i}.yaml`, body: 'x' })));
    const entries = await unpack(many, { maxBytes: 1_000_000, maxEntries: 10 });
    expect(entries.error?.message).toMatch(/it holds more than 10 entries/);
    expect((await readdir(join(entries.root, 'out'))).length).toBeLessThanOrEqual(10);
    // Within the limits the same layers unpack.
    expect((await unpack(many, { maxBytes: 1_000_000, maxEntries: 12 })).files).toHaveLength(12);
    expect(await readFile(join((await unpack(big)).root, 'out', 'big.yaml'), 'utf8')).toHaveLength(200_000);
  });
});
