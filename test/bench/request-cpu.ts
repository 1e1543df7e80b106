// OpenStack CPU per request, on a bed others use at the same time: each API worker process's CPU is sampled
// (a worker thread, so a blocking spawnSync of tofu does not stop it), and each sample interval's CPU of a
// worker is shared among the requests that worker's access log shows in flight then, by overlap. A request
// is then known by its id (x-openstack-request-id, which the client saw and the log names), so what our run
// and tofu's cost is summed from their own requests only, whoever else used the bed meanwhile.
// An estimate: a request waiting on the database takes a share of what the worker spent on its neighbours.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { testbedHome } from '../support/oci.ts';

/** Services whose API workers log one line per request with its id and duration (the eventlet WSGI servers). */
export const loggedServices = ['neutron-server', 'nova-api'] as const;

export interface LoggedRequest {
  id: string;
  pid: number;
  service: string;
  method: string;
  /** The path with ids replaced by ID and the query left out. */
  path: string;
  start: number;
  end: number;
}

export interface Sample {
  at: number;
  ticks: Record<string, number>;
}

const idPattern = /[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{32}/g;

// The sampler: every 100 ms, utime + stime of every process of the process groups named (pgid → service).
const samplerSource = `
const { parentPort, workerData } = require('node:worker_threads');
const { readdirSync, readFileSync } = require('node:fs');
const samples = [];
const take = () => {
  const ticks = {};
  for (const pid of readdirSync('/proc')) {
    if (!/^\\d+$/.test(pid)) continue;
    let stat;
    try { stat = readFileSync('/proc/' + pid + '/stat', 'utf8'); } catch { continue; }
    const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    if (workerData.pgids.includes(f[2])) ticks[pid] = Number(f[11]) + Number(f[12]);
  }
  samples.push({ at: Date.now(), ticks });
};
take();
const timer = setInterval(take, 100);
parentPort.on('message', () => { clearInterval(timer); take(); parentPort.postMessage(samples); });
`;

/** Starts sampling the logged services' processes; `stop` answers the samples. */
export function sampleWorkers(): { stop: () => Promise<Sample[]> } {
  const runDir = join(testbedHome, 'openstack', 'run');
  const pgids = loggedServices.map((s) => readFileSync(join(runDir, `${s}.pid`), 'utf8').trim());
  const worker = new Worker(samplerSource, { eval: true, workerData: { pgids } });
  return {
    stop: () =>
      new Promise<Sample[]>((resolve, reject) => {
        worker.once('message', (s: Sample[]) => void worker.terminate().then(() => resolve(s)));
        worker.once('error', reject);
        worker.postMessage('stop');
      }),
  };
}

const accessLine = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3}) (\d+) INFO \S+ \[\S+ (req-[0-9a-f-]{36})[^\]]*\] \S+ "(\w+) (\S+) [^"]*" status: \d+\s+len: \d+ time: ([\d.]+)/;

/** One access line of an eventlet WSGI server (`… 31743 INFO neutron.wsgi [None req-… …] 127.0.0.1 "POST /v2.0/ports HTTP/1.1" status: 201  len: 9 time: 1.2`), or undefined. */
export function parseAccessLine(text: string, service: string): LoggedRequest | undefined {
  const m = accessLine.exec(text);
  if (!m) return undefined;
  // The services log local time, the time the answer went.
  const end = new Date(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!).getTime();
  // A key pair's id is its name.
  const path = m[11]!.split('?')[0]!.replace(idPattern, 'ID').replace(/\/os-keypairs\/[^/]+/, '/os-keypairs/NAME');
  return { id: m[9]!, pid: Number(m[8]), service, method: m[10]!, path, start: end - Number(m[12]) * 1000, end };
}

/** The requests each logged service's access log shows ending between `from` and `to` (epoch ms). */
export function loggedRequests(from: number, to: number): LoggedRequest[] {
  const out: LoggedRequest[] = [];
  for (const service of loggedServices) {
    for (const text of readFileSync(join(testbedHome, 'openstack', 'log', `${service}.log`), 'utf8').split('\n')) {
      const r = parseAccessLine(text, service);
      if (r && r.end >= from && r.end <= to) out.push(r);
    }
  }
  return out;
}

const systemTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/**
 * CPU seconds per request id: each interval's CPU of a worker shared among its requests in flight, by overlap.
 * `idle` is what workers spent with no request logged in flight (periodic tasks, RPC), per service.
 */
export function attribute(samples: readonly Sample[], requests: readonly LoggedRequest[], ticksPerSecond = systemTicks): { cpu: Map<string, number>; idle: Map<string, number> } {
  const cpu = new Map<string, number>();
  const idle = new Map<string, number>();
  const byPid = new Map<number, LoggedRequest[]>();
  for (const r of requests) byPid.set(r.pid, [...(byPid.get(r.pid) ?? []), r]);
  const serviceOf = new Map(requests.map((r) => [r.pid, r.service]));
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1]!, samples[i]!];
    for (const [pidText, t] of Object.entries(b.ticks)) {
      const spent = (t - (a.ticks[pidText] ?? t)) / ticksPerSecond;
      if (spent <= 0) continue;
      const pid = Number(pidText);
      const inFlight = (byPid.get(pid) ?? []).map((r) => ({ r, overlap: Math.min(r.end, b.at) - Math.max(r.start, a.at) })).filter((x) => x.overlap > 0);
      const total = inFlight.reduce((s, x) => s + x.overlap, 0);
      if (total === 0) {
        const service = serviceOf.get(pid) ?? 'other';
        idle.set(service, (idle.get(service) ?? 0) + spent);
        continue;
      }
      for (const { r, overlap } of inFlight) cpu.set(r.id, (cpu.get(r.id) ?? 0) + (spent * overlap) / total);
    }
  }
  return { cpu, idle };
}

/** Per call kind (`neutron-server POST /v2.0/ports`) of the requests whose ids are in `ids`: count and CPU seconds. */
export function perCallKind(requests: readonly LoggedRequest[], cpu: ReadonlyMap<string, number>, ids: ReadonlySet<string>): Map<string, { n: number; cpu: number }> {
  const out = new Map<string, { n: number; cpu: number }>();
  for (const r of requests) {
    if (!ids.has(r.id)) continue;
    const k = `${r.service} ${r.method} ${r.path}`;
    const a = out.get(k) ?? { n: 0, cpu: 0 };
    out.set(k, { n: a.n + 1, cpu: a.cpu + (cpu.get(r.id) ?? 0) });
  }
  return out;
}

/** The request ids a text names (tofu's debug log prints each answer's headers). */
export function requestIdsIn(text: string): Set<string> {
  return new Set(text.match(/req-[0-9a-f]{8}-[0-9a-f-]{27}/g) ?? []);
}

export interface RequestCpu<T> {
  value: T;
  /** CPU seconds of the API workers for the requests `ids` names. */
  own: number;
  requests: number;
  /** For other users' requests in the same minutes, and with no request in flight. */
  others: number;
  idle: number;
  kinds: Map<string, { n: number; cpu: number }>;
}

/** Runs `work` with the API workers sampled, then sums what the requests `ids(value)` names cost them. */
export async function measureRequests<T>(work: () => T | Promise<T>, ids: (value: T) => ReadonlySet<string>): Promise<RequestCpu<T>> {
  const sampler = sampleWorkers();
  const from = Date.now();
  let value: T;
  let samples: Sample[];
  try {
    value = await work();
  } finally {
    samples = await sampler.stop();
  }
  // The access log is written as each answer goes: a moment for its last lines.
  await new Promise((r) => setTimeout(r, 1000));
  const requests = loggedRequests(from - 1000, Date.now());
  const { cpu, idle } = attribute(samples, requests);
  const mine = ids(value);
  const kinds = perCallKind(requests, cpu, mine);
  const sum = (xs: Iterable<number>): number => [...xs].reduce((a, b) => a + b, 0);
  return {
    value,
    own: sum([...kinds.values()].map((k) => k.cpu)),
    requests: sum([...kinds.values()].map((k) => k.n)),
    others: sum(requests.filter((r) => !mine.has(r.id)).map((r) => cpu.get(r.id) ?? 0)),
    idle: sum(idle.values()),
    kinds,
  };
}
