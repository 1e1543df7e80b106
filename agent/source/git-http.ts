import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git';
import { type Dispatcher, request } from 'undici';
import { PackLimit, type GitFetchLimits } from './git-pack-limit.ts';

/**
 * isomorphic-git's HTTP transport on undici, with the caller's AbortSignal on
 * every request. isomorphic-git's `fetch` passes no signal to its own client,
 * and that client's response iterator can miss a socket error and wait
 * forever; here an abort or a broken connection always ends the operation.
 * Redirects are not followed: credentials are never sent to another place
 * than the configured URL. TLS certificates are verified (undici's default).
 */
export function gitHttpClient(
  options: { signal?: AbortSignal; dispatcher?: Dispatcher; onRequest?: (method: string) => void; limits?: GitFetchLimits & { where: string } } = {},
): HttpClient {
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      options.signal?.throwIfAborted();
      const method = req.method ?? 'GET';
      options.onRequest?.(method);
      let body: Buffer | undefined;
      if (req.body) {
        // Sent with a Content-Length: some servers (CodeCommit) hang up on chunked uploads.
        const chunks: Uint8Array[] = [];
        for await (const chunk of req.body) chunks.push(chunk);
        body = Buffer.concat(chunks);
      }
      const res = await request(req.url, { method: method, headers: req.headers, body, signal: options.signal, dispatcher: options.dispatcher });
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      let answer = res.body[Symbol.asyncIterator]() as AsyncIterableIterator<Uint8Array>;
      // The pack (an upload-pack answer): bounded as it arrives, before isomorphic-git holds all of it (git-pack-limit.ts).
      if (options.limits && method === 'POST' && /git-upload-pack$/.test(new URL(req.url).pathname)) {
        const limit = new PackLimit(options.limits, options.limits.where);
        const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
        try {
          limit.checkLength(length);
        } catch (err) {
          res.body.destroy();
          throw err;
        }
        answer = bounded(answer, limit, () => res.body.destroy());
      }
      return { url: req.url, method, statusCode: res.statusCode, statusMessage: statusText(res.statusCode), headers, body: answer };
    },
  };
}

async function* bounded(body: AsyncIterableIterator<Uint8Array>, limit: PackLimit, stop: () => void): AsyncIterableIterator<Uint8Array> {
  for (;;) {
    const next = await body.next();
    if (next.done) return;
    try {
      limit.push(next.value);
    } catch (err) {
      stop();
      throw err;
    }
    yield next.value;
  }
}

function statusText(code: number): string {
  const known: Record<number, string> = {
    200: 'OK',
    301: 'Moved Permanently',
    302: 'Found',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'Not Found',
    500: 'Internal Server Error',
    502: 'Bad Gateway',
    503: 'Service Unavailable',
    504: 'Gateway Timeout',
  };
  return known[code] ?? `HTTP ${code}`;
}
