import { Readable } from 'node:stream';

/** Reads the first `size` bytes and hands back a stream that still yields everything. */
export async function peek(source: Readable, size: number): Promise<{ head: Buffer; stream: Readable }> {
  const it = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let length = 0;
  let done = false;
  while (length < size) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    chunks.push(r.value);
    length += r.value.length;
  }
  const head = Buffer.concat(chunks);
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      if (head.length > 0) yield head;
      while (!done) {
        const r = await it.next();
        if (r.done) return;
        yield r.value;
      }
    } finally {
      // Closes the source too when the consumer gives up early.
      await it.return?.();
    }
  }
  return { head, stream: Readable.from(rest(), { objectMode: false }) };
}
