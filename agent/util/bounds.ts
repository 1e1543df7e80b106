import { KupenstackError } from '../errors.ts';

/**
 * Bounds on the work the agent does on a tenant's behalf, set by the cluster
 * admin (flags of `kupenstack controller` and `kupenstack agent`, Helm values).
 * One object for the process, set once by the command (configureBounds), as
 * the egress policy is: the kinds, the Git source and the loops read it
 * where they work. Over a bound: a `bound.<name>` error whose message names
 * the bound, the value, the limit and the flag that sets it; the engine
 * leaves the object Stalled (act/refusals.ts).
 */
export interface Bounds {
  /** Glance images a namespace's Images may use, its own and the shared OCI versions it uses. */
  namespaceImages: number;
  /** Their bytes, counted where they are stored (the agent's images project for shared versions). */
  namespaceImageBytes: number;
  /** One image's disk, decompressed. */
  imageBytes: number;
  /** A Flavor's sizes in a namespace without the admin label, in Nova's units. */
  flavor: FlavorBounds;
  /** Every download (Image URL, OCI blob): the slowest rate accepted over rateWindowMs, and the longest it may last. */
  downloadMinBytesPerSecond: number;
  downloadRateWindowMs: number;
  downloadDeadlineMs: number;
  /** One namespace's run (controller) or one Sync's run (standalone). */
  runDeadlineMs: number;
  /** A Sync's Git fetch: the pack received, and any one blob in it. */
  gitFetchBytes: number;
  gitBlobBytes: number;
}

export interface FlavorBounds {
  vcpus: number;
  /** MiB, as spec.ram. */
  ram: number;
  /** GiB, as spec.disk. */
  disk: number;
  /** GiB, as spec.ephemeral. */
  ephemeral: number;
  /** MiB, as spec.swap. */
  swap: number;
  rxtxFactor: number;
}

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** Defaults a shared cluster can live with: generous for one tenant's work, small beside the cluster. */
export const defaultBounds: Bounds = {
  namespaceImages: 100,
  namespaceImageBytes: 200 * GiB,
  imageBytes: 64 * GiB,
  flavor: { vcpus: 64, ram: 256 * 1024, disk: 2048, ephemeral: 1024, swap: 64 * 1024, rxtxFactor: 10 },
  downloadMinBytesPerSecond: 64 * 1024,
  downloadRateWindowMs: 60_000,
  downloadDeadlineMs: 6 * 3_600_000,
  runDeadlineMs: 30 * 60_000,
  // Below the controller pod's memory limit (chart: 512Mi): isomorphic-git holds the pack it receives.
  gitFetchBytes: 128 * MiB,
  gitBlobBytes: 32 * MiB,
};

/**
 * What holds where no command set bounds (`kupenstack apply` and `plan`, the operator's own runs, and
 * tests that drive the engine): the limits the code had before, none of a tenant's.
 */
export const unbounded: Bounds = {
  namespaceImages: Infinity,
  namespaceImageBytes: Infinity,
  imageBytes: 1024 ** 4,
  flavor: { vcpus: Infinity, ram: Infinity, disk: Infinity, ephemeral: Infinity, swap: Infinity, rxtxFactor: Infinity },
  downloadMinBytesPerSecond: 0,
  downloadRateWindowMs: 60_000,
  downloadDeadlineMs: 12 * 3_600_000,
  runDeadlineMs: Infinity,
  gitFetchBytes: Infinity,
  gitBlobBytes: Infinity,
};

/** The flag (and Helm value) of each bound, named in every refusal so the admin knows what to raise. */
export const boundFlags = {
  'image-count': '--max-namespace-images',
  'image-bytes': '--max-namespace-image-bytes',
  'image-size': '--max-image-bytes',
  'flavor-vcpus': '--max-flavor-vcpus',
  'flavor-ram': '--max-flavor-ram',
  'flavor-disk': '--max-flavor-disk',
  'flavor-ephemeral': '--max-flavor-ephemeral',
  'flavor-swap': '--max-flavor-swap',
  'flavor-rxtx-factor': '--max-flavor-rxtx-factor',
  'download-rate': '--download-min-rate',
  'download-deadline': '--download-deadline',
  'run-deadline': '--run-deadline',
  'git-fetch-bytes': '--max-git-fetch-bytes',
  'git-blob-bytes': '--max-git-blob-bytes',
} as const;

export type BoundName = keyof typeof boundFlags;

/**
 * The error of a bound crossed: code `bound.<name>`, message `bound.<name>: <value> > <limit> (<flag>)`
 * (`<` for a minimum, the download rate) and what happened.
 */
export class BoundExceeded extends KupenstackError {
  readonly bound: BoundName;

  constructor(bound: BoundName, value: string, limit: string, what: string, relation: '>' | '<' = '>') {
    super(`bound.${bound}`, `bound.${bound}: ${value} ${relation} ${limit} (${boundFlags[bound]}): ${what}`);
    this.bound = bound;
  }
}

/** A BoundExceeded anywhere in an error's cause chain (a client may wrap it). */
export function boundExceededIn(err: unknown): BoundExceeded | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) if (e instanceof BoundExceeded) return e;
  return undefined;
}

const sizeUnits: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1000,
  kb: 1000,
  ki: 1024,
  kib: 1024,
  m: 1000 ** 2,
  mb: 1000 ** 2,
  mi: MiB,
  mib: MiB,
  g: 1000 ** 3,
  gb: 1000 ** 3,
  gi: GiB,
  gib: GiB,
  t: 1000 ** 4,
  tb: 1000 ** 4,
  ti: 1024 ** 4,
  tib: 1024 ** 4,
};

/** Bytes of `10GiB`, `512Mi`, `1.5G`, `4096`; undefined when the text is not a size. */
export function parseSize(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/.exec(text.trim());
  const unit = m ? sizeUnits[m[2]!.toLowerCase()] : undefined;
  return m && unit !== undefined ? Math.round(Number(m[1]) * unit) : undefined;
}

/** Bytes as people read them: `12 GiB`, `1.5 MiB`, `300 B`. */
export function formatSize(bytes: number): string {
  for (const [unit, size] of [
    ['TiB', 1024 ** 4],
    ['GiB', GiB],
    ['MiB', MiB],
    ['KiB', 1024],
  ] as const) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(1))} ${unit}`;
  }
  return `${bytes} B`;
}

interface Configured {
  bounds: Bounds;
  /** Namespaces the flavor bounds do not hold for (the controller's admin namespaces). */
  exempt: (namespace: string) => boolean;
}

let configured: Configured = { bounds: unbounded, exempt: () => false };

/** Set once by the command that runs the agent for tenants (controller, agent); without a call, `unbounded` holds. */
export function configureBounds(bounds: Bounds, exempt: (namespace: string) => boolean = () => false): void {
  configured = { bounds, exempt };
}

export function bounds(): Bounds {
  return configured.bounds;
}

/** The flavor bound crossed by a Flavor's spec in this namespace, if any (none in an exempt namespace). */
export function flavorBoundCrossed(namespace: string, spec: Readonly<Record<string, unknown>>): BoundExceeded | undefined {
  if (configured.exempt(namespace)) return undefined;
  return flavorOver(spec, configured.bounds.flavor);
}

const flavorFields: ReadonlyArray<[keyof FlavorBounds, BoundName, string]> = [
  ['vcpus', 'flavor-vcpus', ''],
  ['ram', 'flavor-ram', ' MiB'],
  ['disk', 'flavor-disk', ' GiB'],
  ['ephemeral', 'flavor-ephemeral', ' GiB'],
  ['swap', 'flavor-swap', ' MiB'],
  ['rxtxFactor', 'flavor-rxtx-factor', ''],
];

/** The first of a Flavor's sizes over its bound. */
export function flavorOver(spec: Readonly<Record<string, unknown>>, limits: FlavorBounds): BoundExceeded | undefined {
  for (const [field, bound, unit] of flavorFields) {
    const value = spec[field];
    if (typeof value === 'number' && value > limits[field])
      return new BoundExceeded(bound, `${value}${unit}`, `${limits[field]}${unit}`, `spec.${field} is over the cluster admin's limit for a tenant namespace`);
  }
  return undefined;
}

/** The error of a run cut at its deadline: `what` is the namespace (controller) or the Sync (standalone). */
export function runDeadlineExceeded(what: string, ms: number): BoundExceeded {
  return new BoundExceeded(
    'run-deadline',
    `the run of ${what}`,
    `${Math.round(ms / 1000)} s`,
    `abandoned at a safe point (what it wrote is recorded); it runs again with backoff`,
  );
}

/** A signal aborted with `reason()` once `ms` have passed; clear() lets it be when the work ends first. */
export function deadlineSignal(ms: number, reason: () => Error): { signal: AbortSignal; clear: () => void } {
  const ac = new AbortController();
  if (!Number.isFinite(ms)) return { signal: ac.signal, clear: () => undefined };
  // The platform's timer (it keeps no process alive), its reason made the bound's.
  const timeout = AbortSignal.timeout(ms);
  const onTimeout = (): void => ac.abort(reason());
  timeout.addEventListener('abort', onTimeout, { once: true });
  return { signal: ac.signal, clear: () => timeout.removeEventListener('abort', onTimeout) };
}
