import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract, type Header } from 'tar-stream';
import { KupenstackError } from '../errors.ts';
import { linkStaysInside } from './git-checkout.ts';
import { linksLeaving } from './links-leaving.ts';
import { SourceError } from './source.ts';

/**
 * A manifests artifact's tar.gz layer into an empty folder, refusing what
 * could write outside it or fill the disk: absolute names, `..`, names
 * through a link, hard links, devices, links leaving the folder (textually,
 * then once more on the file system: `a -> .`, `b -> a/../x`), more bytes or
 * entries than the limits. A refusal is the whole artifact's: the caller
 * drops the folder.
 */

export interface UnpackLimits {
  /** Bytes of the decompressed tar (entries, headers and padding). */
  maxBytes: number;
  maxEntries: number;
}

/** Manifests are text: as large as `kupenstack push manifests` packs (oci/tar-pack.ts), with room for headers. */
export const defaultUnpackLimits: UnpackLimits = { maxBytes: 80 * 1024 * 1024, maxEntries: 10_000 };

export interface Unpacked {
  files: number;
  links: string[];
}

function refuse(where: string, why: string): SourceError {
  return new SourceError('artifact', `${where}: ${why}; the artifact is refused, nothing of it is applied`);
}

/** Counts decompressed bytes and stops past the limit (a gzip bomb stops here, not at the disk). */
class ByteCap extends Transform {
  private seen = 0;
  private readonly max: number;
  private readonly where: string;
  constructor(max: number, where: string) {
    super();
    this.max = max;
    this.where = where;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.max) return done(refuse(this.where, `it unpacks to more than ${this.max} bytes`));
    done(null, chunk);
  }
}

/** The entry's name made relative and checked; `null` for the root itself. */
export function entryName(header: Header, where: string): string | null {
  const raw = header.name;
  if (raw.includes('\0') || raw.includes('\\')) throw refuse(where, `the entry ${JSON.stringify(raw)} has an unsafe name`);
  if (raw.startsWith('/') || /^[a-zA-Z]:/.test(raw)) throw refuse(where, `the entry ${JSON.stringify(raw)} is an absolute path`);
  if (raw.split('/').includes('..')) throw refuse(where, `the entry ${JSON.stringify(raw)} climbs out with ".."`);
  const name = posix.normalize(raw).replace(/\/+$/, '');
  return name === '.' || name === '' ? null : name;
}

export async function unpackTarGz(layer: Readable, dir: string, where: string, limits: UnpackLimits = defaultUnpackLimits): Promise<Unpacked> {
  const ex = extract();
  const feeding = pipeline(layer, createGunzip(), new ByteCap(limits.maxBytes, where), ex);
  // Errors surface through the iterator too; this keeps the promise from rejecting unhandled.
  feeding.catch(() => undefined);
  const links = new Set<string>();
  let entries = 0;
  let files = 0;
  try {
    for await (const entry of ex) {
      if (++entries > limits.maxEntries) throw refuse(where, `it holds more than ${limits.maxEntries} entries`);
      const { header } = entry;
      const name = entryName(header, where);
      const parts = name?.split('/') ?? [];
      // A name under a link would be written wherever the link points.
      for (let i = 1; i < parts.length; i++)
        if (links.has(parts.slice(0, i).join('/'))) throw refuse(where, `the entry ${name ?? ''} is written through the link ${parts.slice(0, i).join('/')}`);
      const target = name === null ? dir : join(dir, ...parts);
      if (header.type === 'directory') {
        await mkdir(target, { recursive: true });
      } else if (name === null) {
        throw refuse(where, 'an entry names the root folder itself');
      } else if (header.type === 'file' || header.type === 'contiguous-file') {
        const chunks: Buffer[] = [];
        for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
        await mkdir(join(target, '..'), { recursive: true });
        // 'wx': a second entry of the same name is refused, not written over the first.
        await writeFile(target, Buffer.concat(chunks), { flag: 'wx', mode: 0o644 });
        files++;
        continue;
      } else if (header.type === 'symlink') {
        const to = header.linkname ?? '';
        if (!linkStaysInside(name, to)) throw refuse(where, `the link ${name} -> ${to} points outside the artifact`);
        await mkdir(join(target, '..'), { recursive: true });
        await symlink(to, target);
        links.add(name);
      } else {
        throw refuse(where, `the entry ${name} is a ${header.type ?? 'special file'}; a manifests artifact holds folders, files and links inside it`);
      }
      for await (const chunk of entry) void chunk; // drained: the layer digest covers it
    }
    await feeding;
  } catch (err) {
    if (err instanceof KupenstackError || !(err instanceof Error)) throw err;
    throw refuse(where, `it is not a valid tar.gz (${err.message})`);
  }
  // The textual check cannot see links through other links; the file system can.
  const [leaving] = await linksLeaving(dir, links);
  if (leaving !== undefined) throw refuse(where, `the link ${leaving} leads outside the artifact through another link`);
  return { files, links: [...links].sort() };
}
