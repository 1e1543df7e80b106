import type { ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ApiCounters } from '../openstack/counters.ts';

/** The agent's Prometheus series (one registry per agent, so tests can run several). */
export class AgentMetrics {
  readonly registry = new Registry();
  readonly reconcileDuration: Histogram<'sync' | 'result'>;
  readonly reconciles: Counter<'sync' | 'result' | 'trigger'>;
  readonly apiCalls: Counter<'sync' | 'service' | 'method' | 'status'>;
  readonly resources: Gauge<'sync' | 'kind' | 'state'>;
  readonly fetchDuration: Histogram<'sync' | 'result'>;
  readonly fetches: Counter<'sync' | 'result'>;
  readonly lastDuration: Gauge<'sync'>;
  readonly lastApplied: Gauge<'sync' | 'revision'>;
  readonly ready: Gauge<'sync'>;
  readonly webhooks: Counter<'sync' | 'provider' | 'result'>;
  readonly engineEvents: Counter<'sync' | 'type' | 'kind'>;
  readonly shardHeld: Gauge<'shard'>;
  /** With --shards: the shards served and whether this replica holds each (agent/controller/leases/shard-set.ts). */
  shards?: { shards: string[]; holds(shard: string): boolean };
  private readonly revisions = new Map<string, string>();
  private readonly resourceKeys = new Map<string, Set<string>>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'kupenstack_process_' });
    const registers = [this.registry];
    this.reconcileDuration = new Histogram({
      name: 'kupenstack_reconcile_duration_seconds',
      help: 'Duration of one Sync run (fetch, validate, apply), by result.',
      labelNames: ['sync', 'result'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    });
    this.reconciles = new Counter({
      name: 'kupenstack_reconcile_total',
      help: 'Sync runs by result and trigger.',
      labelNames: ['sync', 'result', 'trigger'],
      registers,
    });
    this.apiCalls = new Counter({
      name: 'kupenstack_openstack_api_calls_total',
      help: 'OpenStack API calls by service, method and HTTP status (AUTH = token requests).',
      labelNames: ['sync', 'service', 'method', 'status'],
      registers,
    });
    this.resources = new Gauge({
      name: 'kupenstack_resources',
      help: 'Objects a Sync manages, by kind and state (ready, not-ready, failed).',
      labelNames: ['sync', 'kind', 'state'],
      registers,
    });
    this.fetchDuration = new Histogram({
      name: 'kupenstack_source_fetch_duration_seconds',
      help: 'Duration of fetching a Sync source, by result (ok or the failure: unreachable, auth, ref-not-found, …).',
      labelNames: ['sync', 'result'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    // Plain series beside the histograms: simple text-format parsers (prom2json style) merge the buckets of labelled histograms.
    this.fetches = new Counter({
      name: 'kupenstack_source_fetch_total',
      help: 'Source fetches by result (ok or the failure).',
      labelNames: ['sync', 'result'],
      registers,
    });
    this.lastDuration = new Gauge({
      name: 'kupenstack_reconcile_last_duration_seconds',
      help: 'Duration of the last Sync run.',
      labelNames: ['sync'],
      registers,
    });
    this.lastApplied = new Gauge({
      name: 'kupenstack_last_applied_revision_info',
      help: 'Last applied revision of each Sync (value 1).',
      labelNames: ['sync', 'revision'],
      registers,
    });
    this.ready = new Gauge({
      name: 'kupenstack_sync_ready',
      help: 'Whether the Ready condition of a Sync is True (1) or not (0).',
      labelNames: ['sync'],
      registers,
    });
    this.engineEvents = new Counter({
      name: 'kupenstack_engine_events_total',
      help: 'What the engine did, from its typed events: created, updated, replaced, deleted, healed, held, failed, … by kind.',
      labelNames: ['sync', 'type', 'kind'],
      registers,
    });
    // Read at scrape time, so it is what /readyz says at that moment.
    this.shardHeld = new Gauge({
      name: 'kupenstack_controller_shard_held',
      help: 'With --shards: whether this replica holds the Lease of each shard it serves (1) or not (0).',
      labelNames: ['shard'],
      registers,
      collect: () => {
        const source = this.shards;
        if (source) for (const shard of source.shards) this.shardHeld.set({ shard }, source.holds(shard) ? 1 : 0);
      },
    });
    this.webhooks = new Counter({
      name: 'kupenstack_webhook_deliveries_total',
      help: 'Webhook deliveries by result (triggered, ignored, replayed, rejected).',
      labelNames: ['sync', 'provider', 'result'],
      registers,
    });
  }

  /** API counters for one Sync's OpenStack client, mirrored into the metrics as calls happen. */
  countersFor(sync: string, onWrite?: (at: number) => void): ApiCounters {
    return new MeteredCounters(sync, this.apiCalls, onWrite);
  }

  /** One series per Sync: the old revision's series goes. */
  setLastApplied(sync: string, revision: string): void {
    const old = this.revisions.get(sync);
    if (old !== undefined) this.lastApplied.remove({ sync, revision: old });
    this.revisions.set(sync, revision);
    this.lastApplied.set({ sync, revision }, 1);
  }

  setResources(sync: string, counts: Map<string, number>): void {
    for (const key of this.resourceKeys.get(sync) ?? []) {
      const [kind = '', state = ''] = key.split(' ');
      if (!counts.has(key)) this.resources.remove({ sync, kind, state });
    }
    for (const [key, n] of counts) {
      const [kind = '', state = ''] = key.split(' ');
      this.resources.set({ sync, kind, state }, n);
    }
    this.resourceKeys.set(sync, new Set(counts.keys()));
  }

  /** `GET /metrics` for every HTTP server of either front end. */
  async serve(res: ServerResponse): Promise<void> {
    const text = await this.registry.metrics();
    res.writeHead(200, { 'content-type': this.registry.contentType });
    res.end(text);
  }
}

class MeteredCounters extends ApiCounters {
  private readonly sync: string;
  private readonly calls: Counter<'sync' | 'service' | 'method' | 'status'>;
  private readonly onWrite?: (at: number) => void;

  constructor(sync: string, calls: Counter<'sync' | 'service' | 'method' | 'status'>, onWrite?: (at: number) => void) {
    super();
    this.sync = sync;
    this.calls = calls;
    this.onWrite = onWrite;
  }

  override record(service: string, method: string, status: number): void {
    super.record(service, method, status);
    this.calls.inc({ sync: this.sync, service, method, status: String(status) });
    if (this.onWrite && method !== 'GET' && method !== 'HEAD' && method !== 'AUTH') this.onWrite(Date.now());
  }
}
