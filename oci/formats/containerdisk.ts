import { posix } from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract, type Extract, type Header } from 'tar-stream';
import { KupenstackError } from '../../lib/errors.ts';
import { OciError } from '../errors.ts';

/**
 * The disk inside one tar layer of a KubeVirt containerDisk: the regular
 * file `disk/<name>` (`./disk/…` and `/disk/…` too). The whole layer is read
 * (its digest covers all of it) but only the disk entry is handed out, in
 * constant memory. Refused on sight: a link or symlink where the disk would
 * be, an entry escaping the root (`..`), a second disk entry.
 */

const diskEntryRe = /^disk\/[^/]+$/;

/** `./disk/x` and `/disk/x` → `disk/x`; null when the path climbs out of the root. */
export function normalizeEntryPath(name: string): string | null {
  const trimmed = name.replace(/^(\.\/|\/)+/, '');
  if (trimmed.split('/').includes('..')) return null;
  return posix.normalize(trimmed).replace(/\/$/, '');
}

export interface TarDiskState {
  /** The disk entry's path once found. */
  entry?: string;
  /** Its size from the tar header. */
  size?: number;
}

function checkEntry(header: Header, where: string): string | null {
  const path = normalizeEntryPath(header.name);
  if (path === null) {
    throw new OciError(
      'oci.unsafe',
      `${where}: tar entry "${header.name}" climbs out of the image root (..); refused — a layer like this is built to attack whoever unpacks it`,
    );
  }
  const isDiskPath = diskEntryRe.test(path);
  if ((header.type === 'symlink' || header.type === 'link') && (isDiskPath || path === 'disk')) {
    throw new OciError(
      'oci.unsafe',
      `${where}: tar entry "${header.name}" is a ${header.type === 'link' ? 'hard link' : 'symlink'} to "${header.linkname ?? ''}"; the disk must be a regular file in the layer`,
    );
  }
  if (!isDiskPath) return null;
  if (header.type !== 'file' && header.type !== 'contiguous-file') return null;
  if (posix.basename(path).startsWith('.wh.')) return null; // a whiteout, not a file
  return path;
}

/**
 * Yields the bytes of the disk entry of a tar stream and records it in
 * `state`; yields nothing when the layer has no disk (the caller then tries
 * the next layer down). Ends only after the whole tar was consumed.
 */
export async function* diskFromTar(tar: Readable, decompress: Duplex | undefined, where: string, state: TarDiskState): AsyncGenerator<Buffer> {
  const ex = extract();
  const feeding = decompress ? pipeline(tar, decompress, ex) : pipeline(tar, ex);
  // Errors surface through the iterator; this keeps the promise from rejecting unhandled.
  feeding.catch(() => undefined);
  try {
    yield* entries(ex, where, state);
    await feeding;
  } catch (err) {
    // tar-stream's own errors ("Unexpected end of data", "Invalid tar header") are plain Errors (found by fuzzing): typed here.
    // Anything else (the blob's own network or digest errors) goes up as it is: the caller classifies those.
    if (err instanceof KupenstackError || !(err instanceof Error)) throw err;
    if (/unexpected end|premature close|truncated/i.test(err.message))
      throw new OciError('oci.truncated', `${where}: the tar layer ended early (${err.message}); nothing was used`, { cause: err });
    if (/tar|header|invalid/i.test(err.message))
      throw new OciError('oci.format', `${where} is not a valid tar layer (${err.message}); the image is damaged or not a containerDisk`, { cause: err });
    throw err;
  }
}

async function* entries(ex: Extract, where: string, state: TarDiskState): AsyncGenerator<Buffer> {
  for await (const entry of ex) {
    const path = checkEntry(entry.header, where);
    if (path === null) {
      for await (const chunk of entry) void chunk; // drained: the layer digest covers it
      continue;
    }
    if (state.entry !== undefined) {
      throw new OciError('oci.format', `${where} has two disk files (${state.entry} and ${path}); a containerDisk holds exactly one`);
    }
    state.entry = path;
    state.size = entry.header.size ?? 0;
    for await (const chunk of entry as AsyncIterable<Buffer>) yield chunk;
  }
}
