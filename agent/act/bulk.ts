import type { Remote } from '../kinds/kit/adapter.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { Marker } from '../ownership/marker.ts';
import { retry } from '../../lib/retry.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { limiterPerKey } from '../util/concurrency.ts';
import { journaled } from './journaled.ts';
import { answerLost, LostCreate } from './lost-create.ts';
import type { Node, Run } from './run.ts';

interface Pending {
  node: Node;
  desired: Record<string, unknown>;
  marker: Marker;
  resolve(remote: Remote): void;
  reject(err: unknown): void;
}

type Single = (node: Node, desired: Record<string, unknown>, marker: Marker) => Promise<Remote>;

/** The most objects in one bulk POST: a bigger batch goes as several POSTs (one Neutron transaction each). */
export const maxBulk = 8;

/**
 * Bulk POSTs in flight per cloud. The test bed's Neutron has two API workers: eight bulks of eight ports
 * at once were answered after 50–110 s, past the 60 s timeout, so their creates were lost for the run.
 */
export const maxBulksInFlight = 4;

const inFlight = limiterPerKey<OpenStackCloud>(maxBulksInFlight, new WeakMap());

/** The call's timeout for one object, plus a quarter of it for each further object in the POST (eight objects: 2.75×). */
export function bulkTimeoutMs(baseMs: number, objects: number): number {
  return Math.round(baseMs * (1 + Math.max(0, objects - 1) / 4));
}

/**
 * Neutron's bulk create (KindAdapter.bulkCreate): the creates of one kind in
 * one project that the engine starts in the same turn of the event loop go
 * out as one POST of a list. Neutron makes all or none. A failed bulk is
 * never simply sent again: the objects carrying its markers are looked up
 * first (an answer lost after the create) and adopted; a transient failure
 * retries the rest as a bulk, any other failure falls back to one create per
 * object, so each error belongs to its own manifest.
 */
export class BulkCreator {
  private readonly queues = new Map<string, Pending[]>();
  private readonly run: Run;
  private readonly single: Single;
  /** Bulk POSTs sent (a test and the bench read it). */
  posts = 0;

  constructor(run: Run, single: Single) {
    this.run = run;
    this.single = single;
  }

  async create(node: Node, desired: Record<string, unknown>, marker: Marker): Promise<Remote> {
    const bulk = node.adapter.bulkCreate;
    if (!bulk) return this.single(node, desired, marker);
    // Bulks go with the agent's admin scope: the kind refuses what the project may not do, and sends alone (with the project's token) what Neutron must judge.
    if ((await bulk.scope(node.pc.ctx, node.m, desired)) === 'project') return this.single(node, desired, marker);
    return this.enqueue(node, desired, marker);
  }

  private enqueue(node: Node, desired: Record<string, unknown>, marker: Marker): Promise<Remote> {
    const key = `${node.pc.ctx.projectId}\n${node.m.kind}`;
    return new Promise((resolve, reject) => {
      let queue = this.queues.get(key);
      if (!queue) {
        const fresh: Pending[] = [];
        this.queues.set(key, fresh);
        // Everything the engine starts before the next turn joins this bulk.
        setImmediate(() => {
          if (this.queues.get(key) === fresh) this.queues.delete(key);
          void this.flush(fresh);
        });
        queue = fresh;
      }
      queue.push({ node, desired, marker, resolve, reject });
      // Full: the next create starts another bulk (its own POST).
      if (queue.length >= maxBulk) this.queues.delete(key);
    });
  }

  private async flush(items: Pending[]): Promise<void> {
    if (items.length === 1) return this.alone(items[0]!);
    let pending = items;
    try {
      await retry(
        async () => {
          try {
            await this.post(pending);
            pending = [];
          } catch (err) {
            if (!(err instanceof OpenStackError) || !(err.conflict || err.transient)) throw err;
            try {
              pending = await this.adopt(pending);
            } catch {
              // Without the lookup nothing says the objects are not there: never create them again blind.
              throw new LostCreate(err);
            }
            // No answer in time: Neutron may still be making them; a lookup that finds nothing proves nothing (createOnce's rule).
            if (pending.length > 0) throw answerLost(err) ? new LostCreate(err) : err;
          }
        },
        {
          retries: this.run.opts.transientRetries,
          baseMs: 1000,
          maxMs: 15_000,
          retryable: (err) => err instanceof OpenStackError && err.transient && !err.conflict && !(err instanceof LostCreate),
          onRetry: (err, _attempt, delay) => {
            for (const p of pending)
              this.run.emit(
                'retrying',
                p.node.address,
                'TransientError',
                `${(err as Error).message} (bulk of ${pending.length}, in ${(delay / 1000).toFixed(1)} s)`,
              );
          },
          signal: this.run.opts.signal,
        },
      );
    } catch (err) {
      // The next run adopts or creates them: one by one now could duplicate what the lost bulk is still making.
      if (err instanceof LostCreate) for (const p of pending) p.reject(err);
      // One by one: a refused object (a CIDR overlap, a quota) fails alone, with its own error.
      else await Promise.all(pending.map((p) => this.alone(p)));
    }
  }

  private async alone(p: Pending): Promise<void> {
    try {
      p.resolve(await this.single(p.node, p.desired, p.marker));
    } catch (err) {
      p.reject(err);
    }
  }

  private async post(items: Pending[]): Promise<void> {
    const bulk = items[0]!.node.adapter.bulkCreate!;
    const ctx = items[0]!.node.pc.ctx;
    const bodies: Record<string, unknown>[] = [];
    // The project named in each body, sent with the agent's own (admin) scope: Neutron then skips its
    // per-item network ownership check, a full network load per subnet and port (a fifth of its CPU in a
    // first apply of networks, subnets and ports). The objects are the same, in the same project.
    for (const p of items) bodies.push({ ...(await bulk.body(ctx, p.node.m, p.desired, p.marker)), project_id: ctx.projectId });
    const key = bulk.key ?? bulk.collection;
    // Neutron makes a bulk in one transaction: its answer takes longer with its size, and many at once queue behind each other in its workers.
    const timeoutMs = bulkTimeoutMs(ctx.cloud.session.transport.timeoutMs, items.length);
    const res = await inFlight(ctx.cloud.base)(() => {
      this.posts++;
      return journaled(
        this.run.opts.journal,
        ctx.cloud,
        items.map((p) => p.node.address),
        () => timeoutMs,
        (cloud) =>
          cloud.client('network').call<Record<string, Record<string, unknown>[]>>('POST', `/${bulk.collection}`, { json: { [key]: bodies }, timeoutMs }),
      );
    });
    const raws = res.body[key] ?? [];
    if (raws.length !== items.length)
      throw new OpenStackError({
        status: 0,
        service: 'network',
        method: 'POST',
        path: `/${bulk.collection}`,
        detail: `bulk create answered ${raws.length} objects for ${items.length}`,
      });
    items.forEach((p, i) => p.resolve(bulk.remote(raws[i]!, p.desired, p.marker)));
  }

  /** The objects of a failed bulk that exist anyway (its answer was lost) are adopted; the others are returned. */
  private async adopt(items: Pending[]): Promise<Pending[]> {
    const first = items[0]!.node;
    const found = new Map(
      (await first.adapter.observe(first.pc.ctx)).flatMap((r) => (r.marker?.owner === this.run.opts.owner ? [[r.marker.ref, r] as const] : [])),
    );
    return items.filter((p) => {
      const remote = found.get(p.node.ref);
      if (!remote) return true;
      this.run.emit('adopted', p.node.address, 'Adopted', `adopted ${remote.id}, created by an earlier attempt`, { id: remote.id });
      p.resolve(remote);
      return false;
    });
  }
}
