import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { isKubeStatus, kubeApiError } from '../../kube/errors.ts';

export interface LeaderElectionOptions {
  coordination: k8s.CoordinationV1Api;
  /** Where the Lease lives (the controller's own namespace) and its name. */
  namespace: string;
  name: string;
  /** Unique per process: pod name + random suffix (see holderIdentity). */
  identity: string;
  /** client-go's semantics: others take the lease over once it was not renewed for this long. */
  leaseDurationMs: number;
  /** The leader stops acting once it could not renew for this long; must be below leaseDurationMs. */
  renewDeadlineMs: number;
  /** How often candidates try to acquire and the leader renews. */
  retryPeriodMs: number;
  /** Called when this process becomes the leader. */
  onStartedLeading?: () => void;
  /** Called when leadership is lost or released: stop acting, reset caches. */
  onStoppedLeading?: () => void;
  log?: (line: string) => void;
  /**
   * Sharding (agent/controller/leases/shard-set.ts): false while this candidate may
   * not take a free, expired or missing Lease (a shard it does not prefer,
   * during the start-up grace). Default: always may.
   */
  mayAcquire?: () => boolean;
  /**
   * Sharding: this candidate prefers this Lease. While another holds it, the
   * candidate asks for it back (annotation wantedByAnnotation, refreshed each
   * retry period); a holder that does not prefer it hands it over as soon as
   * it sees a request refreshed (so from a live candidate).
   */
  preferred?: boolean;
  /** Clock (tests). */
  now?: () => number;
}

/** The identity of a replica: its pod name (or host name) and a random suffix, so a restarted pod is a new holder. */
export function holderIdentity(podName = process.env.POD_NAME ?? hostname()): string {
  return `${podName}_${randomBytes(4).toString('hex')}`;
}

/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection package does it: acquire when the lease is free or expired
 * (not renewed for leaseDuration by our own clock since we last saw it
 * change), renew every retryPeriod, and give up after renewDeadline without
 * a successful renew. Updates carry the resourceVersion, so two candidates
 * never both win the same lease.
 *
 * isLeader() is true only while the last successful renew is younger than
 * renewDeadline: since renewDeadline < leaseDuration, a demoted leader stops
 * acting before any other candidate can acquire the lease.
 */
/** On a shard Lease: `<identity> <ms>` of the candidate that prefers it and asks the holder for it. */
export const wantedByAnnotation = 'kupenstack.io/wanted-by';
/** On a shard Lease: "true" while its holder prefers it (then nobody asks for it). */
export const heldPreferredAnnotation = 'kupenstack.io/held-preferred';

export class LeaderElector {
  private readonly opts: Required<Omit<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading' | 'log'>> &
    Pick<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading' | 'log'>;
  /** The request for the Lease as the holder last saw it: handed over only when it changed since (the asker is alive). */
  private seenWant?: string;
  private leading = false;
  private lastRenew = 0;
  /** The lease record as last seen and when (our clock): expiry is judged from the observation, not the holder's clock. */
  private observed?: { holder: string; renewTime: string; at: number };
  private timer?: NodeJS.Timeout;
  private stopped = true;
  private running?: Promise<void>;

  constructor(opts: LeaderElectionOptions) {
    if (opts.renewDeadlineMs >= opts.leaseDurationMs)
      throw new RangeError(`renew deadline (${opts.renewDeadlineMs} ms) must be shorter than the lease duration (${opts.leaseDurationMs} ms)`);
    if (opts.retryPeriodMs >= opts.renewDeadlineMs)
      throw new RangeError(`retry period (${opts.retryPeriodMs} ms) must be shorter than the renew deadline (${opts.renewDeadlineMs} ms)`);
    this.opts = { now: Date.now, mayAcquire: () => true, preferred: false, ...opts };
  }

  get identity(): string {
    return this.opts.identity;
  }

  /** True while this process holds the lease and renewed it within renewDeadline; checked before each batch of writes. */
  isLeader(): boolean {
    if (!this.leading) return false;
    if (this.opts.now() - this.lastRenew < this.opts.renewDeadlineMs) return true;
    this.demote('renew deadline passed');
    return false;
  }

  /** Starts trying to acquire, then renewing; returns at once. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops renewing and, if leading, releases the lease so another replica takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    if (!this.leading) return;
    this.demote('stopping');
    try {
      const lease = await this.opts.coordination.readNamespacedLease({ name: this.opts.name, namespace: this.opts.namespace });
      if (lease.spec?.holderIdentity !== this.opts.identity) return;
      const now = new k8s.V1MicroTime(this.opts.now());
      // As client-go's ReleaseOnCancel: an empty holder and a 1 s lease let the next candidate acquire at once.
      lease.spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now };
      await this.opts.coordination.replaceNamespacedLease({ name: this.opts.name, namespace: this.opts.namespace, body: lease });
      this.opts.log?.(`leader  released lease ${this.opts.namespace}/${this.opts.name}`);
    } catch (e) {
      this.opts.log?.(`leader  could not release lease ${this.opts.namespace}/${this.opts.name}: ${(e as Error).message}`);
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick().finally(() => {
        this.running = undefined;
      });
    }, ms);
  }

  private async tick(): Promise<void> {
    let ok = false;
    // The renew counts from before the request: others see the new renewTime no earlier than that.
    const attempt = this.opts.now();
    try {
      ok = await this.tryAcquireOrRenew(attempt);
    } catch (e) {
      this.opts.log?.(`leader  lease ${this.opts.namespace}/${this.opts.name}: ${(e as Error).message}`);
    }
    if (this.stopped) return;
    if (ok) {
      this.lastRenew = attempt;
      if (!this.leading) {
        this.leading = true;
        this.opts.log?.(`leader  ${this.opts.identity} acquired lease ${this.opts.namespace}/${this.opts.name}`);
        this.opts.onStartedLeading?.();
      }
    } else if (this.leading && this.opts.now() - this.lastRenew >= this.opts.renewDeadlineMs) {
      this.demote('could not renew within the renew deadline');
    }
    // Jitter for candidates (client-go's JitterFactor 1.2), so they do not try in step.
    this.schedule(this.leading ? this.opts.retryPeriodMs : this.opts.retryPeriodMs * (1 + Math.random() * 0.2));
  }

  private demote(why: string): void {
    if (!this.leading) return;
    this.leading = false;
    this.opts.log?.(`leader  ${this.opts.identity} lost lease ${this.opts.namespace}/${this.opts.name} (${why})`);
    this.opts.onStoppedLeading?.();
  }

  private async tryAcquireOrRenew(now: number): Promise<boolean> {
    const { coordination, namespace, name, identity } = this.opts;
    const spec = (transitions: number, acquired: Date): k8s.V1LeaseSpec => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(this.opts.leaseDurationMs / 1000),
      acquireTime: new k8s.V1MicroTime(acquired.getTime()),
      renewTime: new k8s.V1MicroTime(now),
      leaseTransitions: transitions,
    });
    let lease: k8s.V1Lease;
    try {
      lease = await coordination.readNamespacedLease({ name, namespace });
    } catch (e) {
      if (!isKubeStatus(e, 404)) throw kubeApiError(`read lease ${namespace}/${name}`, e);
      if (!this.opts.mayAcquire()) return false;
      try {
        await coordination.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace, ...(this.opts.preferred ? { annotations: { [heldPreferredAnnotation]: 'true' } } : {}) },
            spec: spec(0, new Date(now)),
          },
        });
        return true;
      } catch (err) {
        if (isKubeStatus(err, 409)) return false; // another candidate created it first
        throw kubeApiError(`create lease ${namespace}/${name}`, err);
      }
    }
    const holder = lease.spec?.holderIdentity ?? '';
    const renewTime = String(millis(lease.spec?.renewTime) ?? '');
    if (!this.observed || this.observed.holder !== holder || this.observed.renewTime !== renewTime) this.observed = { holder, renewTime, at: now };
    const durationMs = (lease.spec?.leaseDurationSeconds ?? 0) * 1000;
    const mine = holder === identity;
    const want = lease.metadata?.annotations?.[wantedByAnnotation];
    if (!mine && holder !== '' && this.observed.at + durationMs > now) {
      if (this.opts.preferred && lease.metadata?.annotations?.[heldPreferredAnnotation] !== 'true') await this.ask(lease, now);
      return false;
    }
    if (!mine && !this.opts.mayAcquire()) return false;
    if (mine && !this.opts.preferred && want !== undefined && !want.startsWith(`${identity} `)) {
      const fresh = this.seenWant !== undefined && this.seenWant !== want;
      this.seenWant = want;
      if (fresh) return this.handOver(lease, want.split(' ')[0]!, now);
    }
    if (!mine) this.seenWant = undefined;
    // The request is answered (or ours): the next holder starts with none.
    if (want !== undefined && (want.startsWith(`${identity} `) || !mine)) delete lease.metadata!.annotations![wantedByAnnotation];
    if (this.opts.preferred || lease.metadata?.annotations?.[heldPreferredAnnotation] !== undefined)
      lease.metadata = { ...lease.metadata, annotations: { ...lease.metadata?.annotations, [heldPreferredAnnotation]: String(this.opts.preferred) } };
    const transitions = (lease.spec?.leaseTransitions ?? 0) + (mine ? 0 : 1);
    const acquired = new Date((mine ? millis(lease.spec?.acquireTime) : undefined) ?? now);
    lease.spec = spec(transitions, acquired);
    try {
      // The resourceVersion read above makes this a compare-and-swap: of two candidates, one gets 409.
      await coordination.replaceNamespacedLease({ name, namespace, body: lease });
      this.observed = { holder: identity, renewTime: String(now), at: now };
      return true;
    } catch (e) {
      if (isKubeStatus(e, 409)) return false;
      throw kubeApiError(`update lease ${namespace}/${name}`, e);
    }
  }

  /** A preferred candidate's request to the holder; a conflict with the holder's renew is harmless (asked again next period). */
  private async ask(lease: k8s.V1Lease, now: number): Promise<void> {
    lease.metadata = { ...lease.metadata, annotations: { ...lease.metadata?.annotations, [wantedByAnnotation]: `${this.opts.identity} ${now}` } };
    try {
      await this.opts.coordination.replaceNamespacedLease({ name: this.opts.name, namespace: this.opts.namespace, body: lease });
    } catch (e) {
      if (!isKubeStatus(e, 409)) throw kubeApiError(`ask for lease ${this.opts.namespace}/${this.opts.name}`, e);
    }
  }

  /**
   * Hands the Lease to the candidate that prefers it: this replica stops acting
   * first (onStoppedLeading), then writes the new holder, so the two never act
   * at once. Should the asker be gone, the Lease expires as after a crash.
   */
  private async handOver(lease: k8s.V1Lease, to: string, now: number): Promise<boolean> {
    this.demote(`handing it back to ${to}, which prefers it`);
    const at = new k8s.V1MicroTime(now);
    delete lease.metadata!.annotations![wantedByAnnotation];
    lease.metadata!.annotations![heldPreferredAnnotation] = 'true';
    lease.spec = { ...lease.spec, holderIdentity: to, renewTime: at, acquireTime: at, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 };
    try {
      await this.opts.coordination.replaceNamespacedLease({ name: this.opts.name, namespace: this.opts.namespace, body: lease });
      this.seenWant = undefined;
    } catch (e) {
      // Not written: the Lease still names us; the next tick renews it and hands it over at the next request.
      if (!isKubeStatus(e, 409)) throw kubeApiError(`hand over lease ${this.opts.namespace}/${this.opts.name}`, e);
    }
    return false;
  }
}

/** A Lease time as milliseconds: client-node types it as a Date but hands the wire's string through. */
function millis(time: unknown): number | undefined {
  if (time instanceof Date) return time.getTime();
  if (typeof time === 'string' && !Number.isNaN(Date.parse(time))) return Date.parse(time);
  return undefined;
}
