import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { prng } from '../../support/apply-child.ts';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A fault-injecting reverse proxy in front of the test bed's OpenStack APIs
 * (Keystone, Nova, Neutron, Glance, Cinder), loopback only: one listener per
 * service, JSON answers rewritten so every URL they carry (the token's
 * catalog, pagination links, version documents) points through the proxy
 * again. A seeded generator decides, request by request, whether to pass it
 * or break it the way real clouds and networks do. Buffers are bounded: JSON
 * bodies up to `maxJsonBytes`, everything else streams through.
 */

export type FaultKind =
  | 'status-500'
  | 'status-502'
  | 'status-503'
  | 'status-409'
  | 'status-429'
  /** The connection breaks before the request reaches the service. */
  | 'reset-before'
  /** The service did the work; the connection breaks before its answer arrives. */
  | 'reset-after'
  /** The service did the work; its answer comes later than the client waits. */
  | 'slow'
  /** The service did the work; its answer is cut in the middle of the body. */
  | 'truncate';

export const allFaults: readonly FaultKind[] = ['status-500', 'status-502', 'status-503', 'status-409', 'status-429', 'reset-before', 'reset-after', 'slow', 'truncate'];

export interface FaultOptions {
  seed: number;
  /** Probability that one request is broken (0 = a transparent proxy). */
  rate: number;
  faults?: readonly FaultKind[];
  /** How long a `slow` answer is held back: longer than the client's timeout. */
  slowMs: number;
  /** Only these methods get faults (default: all). */
  methods?: readonly string[];
  /** Only requests whose path (with its query) matches get faults (default: all). */
  paths?: RegExp;
  /** At most this many faults in all (default: no limit). */
  limit?: number;
  /**
   * The first matching request of a faulty round (rate > 0) gets this fault whatever the seed: the
   * seeded faults land on requests in arrival order, which concurrency makes vary, so a case a test
   * must see every time (a create whose answer is lost) is placed, not hoped for.
   */
  first?: { method: string; paths: RegExp; fault: FaultKind };
  maxJsonBytes?: number;
  /**
   * A named simulation of a cloud's state (e.g. slow-builds.ts: servers that stay in BUILD): it may
   * change a JSON answer that passes whole. It never reaches the service: what OpenStack holds is real.
   */
  simulate?: (answer: { service: string; method: string; path: string; body: unknown }) => unknown;
  /**
   * A named simulation's view of requests (e.g. slow-deletes.ts): those whose path matches are read
   * whole (small JSON actions and deletions, never image data) and shown to `seen` before they go on.
   * `seen` may answer `{ deferMs, status }`, a service slow to do the work: the proxy answers that
   * status at once and sends the request as it came `deferMs` later. stop() sends what is still deferred.
   */
  requests?: { paths: RegExp; seen: (request: SeenRequest) => { deferMs: number; status: number } | undefined };
}

export interface SeenRequest {
  service: string;
  method: string;
  path: string;
  body: string;
}

/** A request that reached the service and whose answer the client never got whole. */
export interface LostAnswer {
  fault: FaultKind;
  service: string;
  method: string;
  path: string;
  status: number;
  /** For a create: the id and name of what the service created. */
  id?: string;
  name?: string;
}

/** A request as the proxy received it. */
export interface HeldRequest {
  method: string;
  path: string;
  body: string;
}

/** A request as it passed the proxy, in arrival order: which process wrote to OpenStack, when each has its own proxy. */
export interface ProxiedRequest {
  service: string;
  method: string;
  path: string;
}

/** A request the proxy holds back (see OpenStackFaultProxy.hold). */
export interface Held {
  /** Resolves when a matching request arrived whole: the service has not seen it yet. */
  arrived: Promise<HeldRequest>;
  /** Sends it on to the service, whether or not its client is still there (a service goes on with a request whose client died). */
  release(): void;
  /** The service's status for it once released; the client may never see it. */
  answered: Promise<number>;
}

interface HoldRule {
  method: string;
  paths: RegExp;
  taken: boolean;
  arrived: (r: HeldRequest) => void;
  released: Promise<void>;
  answered: (status: number) => void;
}

export interface Upstream {
  service: string;
  port: number;
}

/** The test bed's OpenStack services (test/testbed/openstack/common.sh). */
export const testbedUpstreams: readonly Upstream[] = [
  { service: 'identity', port: 5000 },
  { service: 'compute', port: 8774 },
  { service: 'network', port: 9696 },
  { service: 'image', port: 9292 },
  { service: 'volumev3', port: 8776 },
];


export class OpenStackFaultProxy {
  readonly lost: LostAnswer[] = [];
  readonly injected = new Map<FaultKind, number>();
  requests = 0;
  readonly seen: ProxiedRequest[] = [];
  private firstPlaced = false;
  private options: FaultOptions;
  private random: () => number;
  private readonly listeners = new Map<number, { server: Server; upstream: Upstream }>();
  private readonly portMap = new Map<number, number>();
  private readonly sockets = new Set<Socket>();
  private readonly upstreams: readonly Upstream[];
  private readonly holds: HoldRule[] = [];
  private readonly deferred = new Set<{ timer: NodeJS.Timeout; send: () => Promise<void> }>();

  constructor(options: FaultOptions, upstreams: readonly Upstream[] = testbedUpstreams) {
    this.options = options;
    this.random = prng(options.seed);
    this.upstreams = upstreams;
  }

  /** A new seed and rate for the next round; what was recorded stays. */
  reseed(seed: number, rate = this.options.rate): void {
    this.options = { ...this.options, seed, rate };
    this.random = prng(seed);
  }

  /** The Keystone URL a clouds.yaml entry uses to go through the proxy. */
  get authUrl(): string {
    return `${this.origin('identity')}/v3`;
  }

  /** `http://127.0.0.1:<port>` of the listener in front of a service. */
  origin(service: string): string {
    const upstream = this.upstreams.find((u) => u.service === service);
    if (!upstream) throw new Error(`the fault proxy has no upstream for ${service}`);
    return `http://127.0.0.1:${this.portMap.get(upstream.port)!}`;
  }

  async start(): Promise<this> {
    for (const upstream of this.upstreams) {
      const server = createServer((req, res) => void this.handle(upstream, req, res).catch(() => res.destroy()));
      server.on('connection', (s) => {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as AddressInfo).port;
      this.listeners.set(port, { server, upstream });
      this.portMap.set(upstream.port, port);
    }
    return this;
  }

  async stop(): Promise<void> {
    // What a simulation deferred reaches the service still: the cloud is left as the clients were told.
    const deferred = [...this.deferred];
    this.deferred.clear();
    for (const d of deferred) clearTimeout(d.timer);
    await Promise.all(deferred.map((d) => d.send()));
    for (const s of this.sockets) s.destroy();
    await Promise.all([...this.listeners.values()].map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }

  /**
   * Holds the next request with this method whose path matches (e.g. a Neutron bulk POST) until
   * release(): a test can kill its client while the create is provably in flight, then let the
   * service make it. Held requests get no seeded fault.
   */
  hold(method: string, paths: RegExp): Held {
    let arrived!: (r: HeldRequest) => void;
    let answered!: (status: number) => void;
    let release!: () => void;
    const rule: HoldRule = {
      method,
      paths,
      taken: false,
      arrived: (r) => arrived(r),
      released: new Promise<void>((r) => (release = r)),
      answered: (status) => answered(status),
    };
    this.holds.push(rule);
    return {
      arrived: new Promise((r) => (arrived = r)),
      answered: new Promise((r) => (answered = r)),
      release: () => release(),
    };
  }

  private pick(method: string, path: string): FaultKind | undefined {
    this.requests++;
    const roll = this.random();
    const which = this.random();
    const first = this.options.first;
    if (first && !this.firstPlaced && this.options.rate > 0 && method === first.method && first.paths.test(path)) {
      this.firstPlaced = true;
      this.injected.set(first.fault, (this.injected.get(first.fault) ?? 0) + 1);
      return first.fault;
    }
    if (this.options.methods && !this.options.methods.includes(method)) return undefined;
    if (this.options.paths && !this.options.paths.test(path)) return undefined;
    if (this.options.limit !== undefined && [...this.injected.values()].reduce((a, b) => a + b, 0) >= this.options.limit) return undefined;
    if (roll >= this.options.rate) return undefined;
    const faults = this.options.faults ?? allFaults;
    const fault = faults[Math.floor(which * faults.length)]!;
    this.injected.set(fault, (this.injected.get(fault) ?? 0) + 1);
    return fault;
  }

  private async handle(upstream: Upstream, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    this.seen.push({ service: upstream.service, method, path: req.url ?? '/' });
    const held = this.holds.find((h) => !h.taken && h.method === method && h.paths.test(req.url ?? '/'));
    if (held) {
      held.taken = true;
      await this.holdAndForward(held, upstream, req, res);
      return;
    }
    let buffered: Buffer | undefined;
    if (this.options.requests?.paths.test(req.url ?? '/')) {
      buffered = (await readBounded(req, this.options.maxJsonBytes ?? 16 * 1024 * 1024)) ?? Buffer.alloc(0);
      const later = this.options.requests.seen({ service: upstream.service, method, path: req.url ?? '/', body: buffered.toString('utf8') });
      if (later) {
        this.defer(upstream, req, buffered, later.deferMs);
        res.writeHead(later.status, { 'content-length': '0' }).end();
        return;
      }
    }
    const fault = this.pick(method, req.url ?? '/');
    if (fault?.startsWith('status-')) {
      const status = Number(fault.slice('status-'.length));
      req.resume();
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (status === 429) headers['retry-after'] = '1';
      res.writeHead(status, headers).end(JSON.stringify({ error: { code: status, message: `injected ${status} by the fault proxy` } }));
      return;
    }
    if (fault === 'reset-before') {
      req.socket.destroy();
      return;
    }
    const headers = { ...req.headers, host: `127.0.0.1:${upstream.port}` };
    const up = request({ host: '127.0.0.1', port: upstream.port, method, path: req.url, headers });
    up.on('error', () => res.destroy());
    if (buffered) up.end(buffered);
    else req.pipe(up);
    const answer = await new Promise<IncomingMessage | undefined>((resolve) => {
      up.on('response', resolve);
      up.on('error', () => resolve(undefined));
    });
    if (!answer) return;
    const json = (answer.headers['content-type'] ?? '').includes('json');
    if (!json && fault === undefined) {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      return;
    }
    const body = await readBounded(answer, this.options.maxJsonBytes ?? 16 * 1024 * 1024);
    if (body === undefined) {
      res.destroy();
      return;
    }
    const text = json ? this.simulated(upstream, method, req.url ?? '', this.rewrite(body.toString('utf8'))) : body.toString('latin1');
    const out = Buffer.from(text, json ? 'utf8' : 'latin1');
    const status = answer.statusCode ?? 502;
    const outHeaders = { ...answer.headers, 'content-length': String(out.length) };
    delete outHeaders['transfer-encoding'];
    if (fault === 'reset-after' || fault === 'slow' || fault === 'truncate') this.record(fault, upstream, method, req.url ?? '', status, out);
    if (fault === 'reset-after') {
      res.destroy();
      return;
    }
    if (fault === 'slow') {
      await new Promise((resolve) => setTimeout(resolve, this.options.slowMs));
      if (!res.destroyed) res.writeHead(status, outHeaders).end(out);
      return;
    }
    if (fault === 'truncate') {
      // Half the body: alternately a clean short body (a length that matches) and a connection cut mid-body.
      const half = out.subarray(0, Math.floor(out.length / 2));
      if (this.random() < 0.5) res.writeHead(status, { ...outHeaders, 'content-length': String(half.length) }).end(half);
      else {
        res.writeHead(status, outHeaders);
        res.write(half, () => res.destroy());
      }
      return;
    }
    res.writeHead(status, outHeaders).end(out);
  }

  /** Sends a request the simulation deferred, as it came, once `ms` passed (or at stop()); its answer goes nowhere. */
  private defer(upstream: Upstream, req: IncomingMessage, body: Buffer, ms: number): void {
    const headers = { ...req.headers, host: `127.0.0.1:${upstream.port}` };
    const options = { host: '127.0.0.1', port: upstream.port, method: req.method ?? 'GET', path: req.url ?? '/', headers };
    const send = (): Promise<void> =>
      new Promise<void>((resolve) => {
        const up = request(options, (answer) => answer.resume().on('end', resolve).on('error', () => resolve()));
        up.on('error', () => resolve());
        up.end(body);
      });
    const entry = {
      timer: setTimeout(() => {
        this.deferred.delete(entry);
        void send();
      }, ms),
      send,
    };
    this.deferred.add(entry);
  }

  /** A JSON answer as the simulation shows it (FaultOptions.simulate); the text itself without one, or when it is not JSON. */
  private simulated(upstream: Upstream, method: string, path: string, text: string): string {
    const simulate = this.options.simulate;
    if (!simulate || text === '') return text;
    try {
      return JSON.stringify(simulate({ service: upstream.service, method, path, body: JSON.parse(text) as unknown }));
    } catch {
      return text;
    }
  }

  /** The whole request is read first, so it reaches the service as sent even when its client was killed meanwhile. */
  private async holdAndForward(held: HoldRule, upstream: Upstream, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const body = (await readBounded(req, this.options.maxJsonBytes ?? 16 * 1024 * 1024)) ?? Buffer.alloc(0);
    held.arrived({ method, path, body: body.toString('utf8') });
    await held.released;
    const headers = { ...req.headers, host: `127.0.0.1:${upstream.port}`, 'content-length': String(body.length) };
    delete headers['transfer-encoding'];
    const answer = await new Promise<IncomingMessage | undefined>((resolve) => {
      const up = request({ host: '127.0.0.1', port: upstream.port, method, path, headers }, resolve);
      up.on('error', () => resolve(undefined));
      up.end(body);
    });
    if (!answer) {
      held.answered(0);
      res.destroy();
      return;
    }
    const out = Buffer.from(this.rewrite(((await readBounded(answer, this.options.maxJsonBytes ?? 16 * 1024 * 1024)) ?? Buffer.alloc(0)).toString('utf8')), 'utf8');
    const status = answer.statusCode ?? 502;
    held.answered(status);
    if (res.destroyed || req.socket.destroyed) {
      this.record('reset-after', upstream, method, path, status, out);
      return;
    }
    const outHeaders = { ...answer.headers, 'content-length': String(out.length) };
    delete outHeaders['transfer-encoding'];
    res.writeHead(status, outHeaders).end(out);
  }

  /** Every URL of a proxied service, in a JSON answer, points through the proxy. */
  private rewrite(text: string): string {
    return text.replace(/(https?:(?:\\?\/){2})(127\.0\.0\.1|localhost):(\d+)/g, (whole, scheme: string, _host: string, port: string) => {
      const mapped = this.portMap.get(Number(port));
      return mapped ? `${scheme}127.0.0.1:${mapped}` : whole;
    });
  }

  private record(fault: FaultKind, upstream: Upstream, method: string, path: string, status: number, body: Buffer): void {
    const lost: LostAnswer = { fault, service: upstream.service, method, path: path.split('?')[0]!, status };
    if (method === 'POST' && status >= 200 && status < 300) {
      try {
        const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
        const [object] = Object.values(parsed);
        if (object && typeof object === 'object' && !Array.isArray(object)) {
          const o = object as { id?: unknown; name?: unknown };
          if (typeof o.id === 'string') lost.id = o.id;
          if (typeof o.name === 'string') lost.name = o.name;
        }
      } catch {
        // Not a JSON object: nothing to name.
      }
    }
    this.lost.push(lost);
  }
}

async function readBounded(stream: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) {
        stream.destroy();
        return undefined;
      }
      chunks.push(chunk);
    }
  } catch {
    return undefined;
  }
  return Buffer.concat(chunks);
}
