import { connect as connectTcp, isIP, type OnReadOpts, type Socket } from 'node:net';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';

/**
 * HTTP/1.1 on a bare socket, the little the bulk transfers need (a blob GET
 * read into slabs, a Glance PUT whose pieces go back to the pool once
 * written): the connection, the request head, the answer's head. One request
 * per connection (`Connection: close`); framing beyond Content-Length is the
 * callers' cue to use their full HTTP client instead.
 */

export interface SocketOptions {
  /** Extra CA bundle for https. */
  ca?: Buffer | undefined;
  /** false only where the caller's configuration says so (a cloud's `verify: false`). Default true. */
  rejectUnauthorized?: boolean | undefined;
  /** Reads into the caller's memory instead of a fresh buffer per read. */
  onread?: OnReadOpts | undefined;
}

export function connectSocket(url: URL, options: SocketOptions): Socket {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const onread = options.onread ? { onread: options.onread } : {};
  if (url.protocol === 'http:') return connectTcp({ host, port, ...onread });
  // tls.connect reads into `onread` as net.connect does (Node ≥ 14.5), though @types/node does not declare it.
  const tlsOptions: ConnectionOptions & { onread?: OnReadOpts } = {
    host,
    port,
    ...(isIP(host) ? {} : { servername: host }),
    ...(options.ca ? { ca: options.ca } : {}),
    ...(options.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
    ALPNProtocols: ['http/1.1'],
    ...onread,
  };
  return connectTls(tlsOptions);
}

/** The request line and headers; undefined when a header holds a line break (never sent: it would split the request). */
export function requestHead(method: string, url: URL, headers: Record<string, string>): string | undefined {
  const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`];
  for (const [name, value] of Object.entries(headers)) {
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) return undefined;
    lines.push(`${name}: ${value}`);
  }
  lines.push('Connection: close', '', '');
  return lines.join('\r\n');
}

export interface ResponseHead {
  status: number;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
}

/** The status line and headers (the text before the blank line); undefined when it is not HTTP/1.x. */
export function parseResponseHead(text: string): ResponseHead | undefined {
  const [statusLine, ...lines] = text.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (!m) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(m[1]), headers };
}

/** A body this path reads: Content-Length framing, no transfer or content coding; its length, else undefined. */
export function plainBodyLength(headers: Record<string, string>): number | undefined {
  if (headers['transfer-encoding'] !== undefined || (headers['content-encoding'] ?? 'identity') !== 'identity') return undefined;
  const length = headers['content-length'];
  return length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
}
