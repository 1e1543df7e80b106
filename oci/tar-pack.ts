import { createHash } from 'node:crypto';
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack, type Header } from 'tar-stream';
import { OciError } from './errors.ts';

/**
 * A folder as a reproducible tar.gz: entries sorted by path, fixed mtime,
 * owner and modes, no `.git`, so the same folder gives the same bytes and
 * the same digest on every machine (Flux's `push artifact --reproducible`
 * idea). Only folders and regular files: a link would point somewhere the
 * reader has no copy of, so it is refused with its path.
 */

/** Manifests are text: a folder this large is not a folder of manifests. */
export const maxPackBytes = 64 * 1024 * 1024;

/** The fixed modification time of every entry (the epoch, as Flux's reproducible mode). */
const fixedMtime = new Date(0);

export interface PackedFolder {
  /** The tar.gz bytes. */
  data: Buffer;
  /** Regular files packed (paths relative to the folder, `/`-separated). */
  files: string[];
  /** sha256:<hex> of the bytes. */
  digest: string;
}

/** Paths under `dir`, sorted, folders before what is in them; `.git` left out. */
async function walk(dir: string, rel: string, out: { path: string; type: 'directory' | 'file' }[]): Promise<void> {
  const names = (await readdir(join(dir, rel))).filter((n) => n !== '.git').sort();
  for (const name of names) {
    const path = rel === '' ? name : posix.join(rel, name);
    const info = await lstat(join(dir, path));
    if (info.isDirectory()) {
      out.push({ path, type: 'directory' });
      await walk(dir, path, out);
    } else if (info.isFile()) {
      out.push({ path, type: 'file' });
    } else {
      throw new OciError(
        'oci.unsafe',
        `${join(dir, path)} is ${info.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}; push a folder of regular files (copy the link's target in)`,
      );
    }
  }
}

export async function packFolder(dir: string): Promise<PackedFolder> {
  let info;
  try {
    info = await lstat(dir);
  } catch (err) {
    throw new OciError('oci.reference', `cannot read ${dir}: ${(err as NodeJS.ErrnoException).code ?? 'error'}; give the folder of manifests`, { cause: err });
  }
  if (!info.isDirectory()) throw new OciError('oci.reference', `${dir} is not a folder; give the folder of manifests`);
  const entries: { path: string; type: 'directory' | 'file' }[] = [];
  await walk(dir, '', entries);
  const tar = pack();
  const chunks: Buffer[] = [];
  tar.on('data', (c: unknown) => void chunks.push(c as Buffer));
  const ended = new Promise<void>((resolve, reject) => {
    tar.on('end', resolve);
    tar.on('error', reject);
  });
  let total = 0;
  const files: string[] = [];
  for (const e of entries) {
    const dirEntry = e.type === 'directory';
    const fixed = { mtime: fixedMtime, uid: 0, gid: 0, uname: '', gname: '' };
    const header: Partial<Header> & { name: string } = { name: dirEntry ? `${e.path}/` : e.path, type: e.type, mode: dirEntry ? 0o755 : 0o644, ...fixed };
    if (dirEntry) {
      tar.entry(header);
      continue;
    }
    const body = await readFile(join(dir, e.path));
    total += body.length;
    if (total > maxPackBytes)
      throw new OciError('oci.too-large', `${dir} holds more than ${maxPackBytes} bytes; a manifests artifact is a folder of manifests, not of data`);
    tar.entry({ ...header, size: body.length }, body);
    files.push(e.path);
  }
  tar.finalize();
  await ended;
  // zlib writes no time and no name into the gzip header: the bytes depend on the tar alone.
  const data = gzipSync(Buffer.concat(chunks), { level: 9 });
  return { data, files, digest: `sha256:${createHash('sha256').update(data).digest('hex')}` };
}
