import type * as k8s from '@kubernetes/client-node';
import { LeaderElector } from './leader.ts';
import { mayAcquire, shardLeaseName } from './shards.ts';

export interface ShardSetOptions {
  coordination: k8s.CoordinationV1Api;
  /** The controller's namespace, where the shard Leases live. */
  namespace: string;
  /** Lease name prefix: `<prefix>-shard-<name>`. */
  leasePrefix: string;
  shards: string[];
  preferred?: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** How long after start a replica leaves the shards it does not prefer to their preferred replicas. */
  graceMs: number;
  onGained: (shard: string) => void;
  onLost: (shard: string) => void;
  /** Called with the shards held after each change (log line, metrics gauge). */
  onChange?: (held: string[]) => void;
  log?: (line: string) => void;
  now?: () => number;
}

/**
 * One LeaderElector per shard: a replica acts on a namespace only while it
 * holds the Lease of that namespace's shard. It contends at once for its
 * preferred shard and for the others only after the grace period (and then,
 * like any candidate, only for a Lease that is free or expired); a holder of
 * a shard it does not prefer hands it back when the preferred replica asks.
 */
export class ShardSet {
  private readonly electors = new Map<string, LeaderElector>();
  private readonly opts: ShardSetOptions;
  private started = 0;
  private lastHeld?: string;

  constructor(opts: ShardSetOptions) {
    this.opts = opts;
    const now = opts.now ?? Date.now;
    for (const shard of opts.shards) {
      this.electors.set(
        shard,
        new LeaderElector({
          coordination: opts.coordination,
          namespace: opts.namespace,
          name: shardLeaseName(opts.leasePrefix, shard),
          identity: opts.identity,
          leaseDurationMs: opts.leaseDurationMs,
          renewDeadlineMs: opts.renewDeadlineMs,
          retryPeriodMs: opts.retryPeriodMs,
          preferred: shard === opts.preferred,
          mayAcquire: () => mayAcquire(shard, opts.preferred, now() - this.started, opts.graceMs),
          log: opts.log,
          now,
          onStartedLeading: () => {
            opts.onGained(shard);
            this.changed();
          },
          onStoppedLeading: () => {
            opts.onLost(shard);
            this.changed();
          },
        }),
      );
    }
  }

  get identity(): string {
    return this.opts.identity;
  }

  get shards(): string[] {
    return this.opts.shards;
  }

  /** Whether this replica may act on the namespaces of `shard` now (holds its Lease, renewed within the deadline). */
  holds(shard: string): boolean {
    return this.electors.get(shard)?.isLeader() ?? false;
  }

  held(): string[] {
    return this.opts.shards.filter((s) => this.holds(s));
  }

  start(): void {
    this.started = (this.opts.now ?? Date.now)();
    for (const e of this.electors.values()) e.start();
  }

  /** Releases every Lease held, so the other replicas take the shards over at once. */
  async stop(): Promise<void> {
    await Promise.all([...this.electors.values()].map((e) => e.stop()));
  }

  /** Once per change of the set (several Leases lost together are one change). */
  private changed(): void {
    const held = this.held();
    if (held.join(',') === this.lastHeld) return;
    this.lastHeld = held.join(',');
    this.opts.onChange?.(held);
  }
}
