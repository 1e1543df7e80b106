import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP proxy for tests, in front of a REAL registry: it forwards every
 * request and, when a rule matches, breaks the answer the way networks and
 * overloaded registries do — cuts a body after N bytes, answers 5xx, or
 * redirects to a second listener (another origin) to check what headers
 * cross origins. Records every request it saw.
 */

export type Fault =
  | { kind: 'cut'; afterBytes: number }
  | { kind: 'status'; status: number }
  | { kind: 'redirect-other-origin' }
  /** Forwarded only once `until` settles (tests that need two clients in the same step at once). */
  | { kind: 'hold'; until: Promise<unknown> }
  /** The answer's body trickles at this rate (a transfer a test can interrupt in the middle). */
  | { kind: 'slow'; bytesPerSecond: number };

export interface Rule {
  method?: string;
  path: RegExp;
  /** Only requests with (true) or without (false) a Range header. */
  range?: boolean;
  fault: Fault;
  /** How many matching requests get the fault (default: all). */
  times?: number;
}

export interface Seen {
  listener: 'main' | 'other';
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  status?: number;
}

export class FaultProxy {
  readonly upstream: { host: string; port: number };
  rules: Rule[] = [];
  readonly seen: Seen[] = [];
  /** Extra headers the second listener adds upstream (e.g. its own credentials), since it gets none. */
  otherOriginHeaders: Record<string, string> = {};
  private main: Server | undefined;
  private other: Server | undefined;

  constructor(upstream: string) {
    const [host, port] = upstream.split(':');
    this.upstream = { host: host!, port: Number(port) };
  }

  get address(): string {
    return `127.0.0.1:${(this.main!.address() as AddressInfo).port}`;
  }

  private get otherAddress(): string {
    return `127.0.0.1:${(this.other!.address() as AddressInfo).port}`;
  }

  async start(): Promise<this> {
    this.main = createServer((req, res) => this.handle('main', req, res));
    this.other = createServer((req, res) => this.handle('other', req, res));
    await Promise.all([this.main, this.other].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
    return this;
  }

  async stop(): Promise<void> {
    for (const s of [this.main, this.other]) {
      s?.closeAllConnections();
      await new Promise<void>((resolve) => (s ? s.close(() => resolve()) : resolve()));
    }
  }

  private pick(req: IncomingMessage): Fault | undefined {
    for (const rule of this.rules) {
      if (rule.method && rule.method !== req.method) continue;
      if (!rule.path.test(req.url ?? '')) continue;
      if (rule.range !== undefined && rule.range !== (req.headers.range !== undefined)) continue;
      if (rule.times !== undefined) {
        if (rule.times <= 0) continue;
        rule.times--;
      }
      return rule.fault;
    }
    return undefined;
  }

  private handle(listener: 'main' | 'other', req: IncomingMessage, res: ServerResponse): void {
    const record: Seen = { listener, method: req.method ?? '', path: req.url ?? '', headers: req.headers };
    this.seen.push(record);
    const fault = listener === 'main' ? this.pick(req) : undefined;
    if (fault?.kind === 'status') {
      record.status = fault.status;
      req.resume();
      res.writeHead(fault.status, { 'content-type': 'text/plain' }).end('injected fault\n');
      return;
    }
    if (fault?.kind === 'redirect-other-origin') {
      record.status = 307;
      req.resume();
      res.writeHead(307, { location: `http://${this.otherAddress}${req.url ?? '/'}` }).end();
      return;
    }
    if (fault?.kind === 'hold') {
      const go = (): void => this.forward(listener, req, res, record, undefined);
      void fault.until.then(go, go);
      return;
    }
    this.forward(listener, req, res, record, fault);
  }

  private forward(listener: 'main' | 'other', req: IncomingMessage, res: ServerResponse, record: Seen, fault: Fault | undefined): void {
    const headers: IncomingHttpHeaders = { ...req.headers, host: `${this.upstream.host}:${this.upstream.port}` };
    if (listener === 'other') Object.assign(headers, this.otherOriginHeaders);
    const up = request({ host: this.upstream.host, port: this.upstream.port, method: req.method, path: req.url, headers }, (upRes) => {
      record.status = upRes.statusCode;
      const outHeaders = { ...upRes.headers };
      // Location headers name the upstream: point them back at the proxy.
      if (typeof outHeaders.location === 'string') {
        outHeaders.location = outHeaders.location.replace(`//${this.upstream.host}:${this.upstream.port}`, `//${listener === 'main' ? this.address : this.otherAddress}`);
      }
      res.writeHead(upRes.statusCode ?? 502, outHeaders);
      if (fault?.kind === 'slow') {
        const rate = fault.bytesPerSecond;
        upRes.on('data', (chunk: Buffer) => {
          res.write(chunk);
          upRes.pause();
          setTimeout(() => upRes.resume(), (chunk.length / rate) * 1000);
        });
        upRes.on('end', () => res.end());
        return;
      }
      if (fault?.kind !== 'cut') {
        upRes.pipe(res);
        return;
      }
      let sent = 0;
      upRes.on('data', (chunk: Buffer) => {
        const room = fault.afterBytes - sent;
        if (room <= 0) return;
        const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
        sent += piece.length;
        res.write(piece);
        if (sent >= fault.afterBytes) {
          upRes.destroy();
          // A broken connection, not a clean end: the client sees fewer bytes than Content-Length.
          res.socket?.destroy();
        }
      });
      upRes.on('end', () => res.end());
    });
    up.on('error', () => res.socket?.destroy());
    req.pipe(up);
  }
}
