import { inflateSync } from 'node:zlib';
import { BoundExceeded, formatSize } from '../util/bounds.ts';

/**
 * The bounds of a Sync's Git fetch, checked on the response as it arrives,
 * before isomorphic-git holds it: the bytes received (`fetchBytes`, refused
 * at once when the server's Content-Length says more), and each object's
 * size in the pack (`blobBytes`): a pack object's header states its size
 * before its data, and a delta's data starts with the size of the object it
 * makes, so a huge file (even one that compresses to almost nothing) is
 * refused before it is inflated in memory. The scan keeps only the pack's
 * unread tail and inflates one object at a time, at most `blobBytes` of it.
 */
export interface GitFetchLimits {
  fetchBytes: number;
  blobBytes: number;
}

const objectTypes: Record<number, string> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag', 6: 'delta', 7: 'delta' };

export class PackLimit {
  private readonly limits: GitFetchLimits;
  private readonly where: string;
  private received = 0;
  /** Bytes of pkt-lines not yet complete, and of the pack not yet parsed. */
  private lines: Buffer = Buffer.alloc(0);
  private pack: Buffer = Buffer.alloc(0);
  private raw = false;
  private headerSeen = false;
  /** Objects left in the pack, and the pack bytes an object needs at least before inflating it is tried again. */
  private objectsLeft = Infinity;
  private nextTry = 0;

  constructor(limits: GitFetchLimits, where: string) {
    this.limits = limits;
    this.where = where;
  }

  /** Before the body: a stated length over the bound is refused unread. */
  checkLength(contentLength: number | undefined): void {
    if (contentLength !== undefined && contentLength > this.limits.fetchBytes) throw this.tooMuch(formatSize(contentLength));
  }

  /** Each chunk of the upload-pack response, in order; throws the bound crossed. */
  push(chunk: Uint8Array): void {
    this.received += chunk.length;
    if (this.received > this.limits.fetchBytes) throw this.tooMuch(`more than ${formatSize(this.limits.fetchBytes)}`);
    if (this.raw) return this.packData(Buffer.from(chunk));
    this.lines = Buffer.concat([this.lines, chunk]);
    this.demux();
  }

  /** pkt-lines: band 1 is pack data; progress, errors and the text lines before the pack are skipped. */
  private demux(): void {
    while (this.lines.length >= 4) {
      if (this.lines.subarray(0, 4).toString('latin1') === 'PACK') {
        // No side band: the pack follows the text lines as it is.
        this.raw = true;
        const rest = this.lines;
        this.lines = Buffer.alloc(0);
        return this.packData(rest);
      }
      const length = Number.parseInt(this.lines.subarray(0, 4).toString('latin1'), 16);
      if (!Number.isFinite(length)) return;
      if (length < 4) {
        this.lines = this.lines.subarray(4);
        continue;
      }
      if (this.lines.length < length) return;
      const payload = this.lines.subarray(4, length);
      this.lines = this.lines.subarray(length);
      if (payload[0] === 1) this.packData(payload.subarray(1));
    }
  }

  private packData(data: Buffer): void {
    this.pack = this.pack.length ? Buffer.concat([this.pack, data]) : data;
    if (!this.headerSeen) {
      if (this.pack.length < 12) return;
      this.objectsLeft = this.pack.readUInt32BE(8);
      this.pack = this.pack.subarray(12);
      this.headerSeen = true;
    }
    while (this.objectsLeft > 0 && this.pack.length > 0 && this.pack.length >= this.nextTry) {
      const used = this.object();
      if (used === undefined) return;
      this.pack = this.pack.subarray(used);
      this.objectsLeft--;
      this.nextTry = 0;
    }
  }

  /** One object at the start of the unread pack: its size judged, its length in the pack; undefined while its bytes are not all here. */
  private object(): number | undefined {
    const p = this.pack;
    let i = 0;
    let byte = p[i++]!;
    const type = (byte >> 4) & 7;
    let size = byte & 15;
    for (let shift = 4; byte & 0x80; shift += 7) {
      if (i >= p.length) return undefined;
      byte = p[i++]!;
      size += (byte & 0x7f) * 2 ** shift;
    }
    this.judge(objectTypes[type] ?? 'object', size);
    if (type === 6) {
      // The base's negative offset: a varint.
      do if (i >= p.length) return undefined;
      while (p[i++]! & 0x80);
    } else if (type === 7) i += 20;
    if (i >= p.length) return undefined;
    let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
    try {
      inflated = inflateSync(p.subarray(i), { info: true, maxOutputLength: Math.max(1, size) }) as unknown as typeof inflated;
    } catch {
      // Not all here yet: tried again once the tail has doubled, so a large object is inflated a few times, not once per chunk.
      this.nextTry = p.length * 2;
      return undefined;
    }
    if (type === 6 || type === 7) this.judge('file', deltaTargetSize(inflated.buffer));
    return i + inflated.engine.bytesWritten;
  }

  private judge(what: string, size: number): void {
    if (size > this.limits.blobBytes)
      throw new BoundExceeded(
        'git-blob-bytes',
        formatSize(size),
        formatSize(this.limits.blobBytes),
        `${this.where}: a ${what} in the fetched pack is over the cluster admin's limit per file; nothing of this fetch was used`,
      );
  }

  private tooMuch(value: string): BoundExceeded {
    return new BoundExceeded(
      'git-fetch-bytes',
      value,
      formatSize(this.limits.fetchBytes),
      `${this.where}: the Git fetch is over the cluster admin's limit; refused before it was held in memory`,
    );
  }
}

/** A delta's data: the base's size, then the size of the object it makes (two little-endian varints). */
function deltaTargetSize(delta: Buffer): number {
  let i = 0;
  while (i < delta.length && delta[i++]! & 0x80);
  let size = 0;
  for (let shift = 0; i < delta.length; shift += 7) {
    const byte = delta[i++]!;
    size += (byte & 0x7f) * 2 ** shift;
    if (!(byte & 0x80)) break;
  }
  return size;
}
