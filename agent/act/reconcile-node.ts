import { waitingOf, type KindAdapter, type Remote, type Waiting } from '../kinds/kit/adapter.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { Marker } from '../ownership/marker.ts';
import { adopts } from '../plan/decide.ts';
import { difference, replaceHash } from '../plan/diff.ts';
import { retry } from '../../lib/retry.ts';
import { know } from './context.ts';
import { heal, recordHeal } from './heal.ts';
import { journaled, sentWith } from './journaled.ts';
import { answerLost, LostCreate } from './lost-create.ts';
import { progressOf, type Progress } from './progress.ts';
import type { ResourceState } from '../status/state.ts';
import type { Node, Run } from './run.ts';
import { waitReady } from './wait.ts';

/*
 * One object's turn in an execution: create (once, adopting what an earlier
 * attempt made), update, heal, and the follow-ups a create leaves. Answers
 * the progress of an object OpenStack is still working on (requeue mode).
 */

export async function reconcileNode(node: Node, run: Run): Promise<Progress | undefined> {
  const { adapter, m } = node;
  const { opts } = run;
  opts.signal?.throwIfAborted();
  const state = (opts.resources[node.address] ??= {});
  const desired = await adapter.desired(m, node.pc.ctx);
  // An adopted object was not made here: it is left in place when its manifest goes, unless the manifest says delete.
  state.onDelete = (m.spec.onDelete ?? (adopts(m) ? 'detach' : 'delete')) === 'detach' ? 'detach' : undefined;
  if (node.adopting && node.remote) return adoptNode(node, node.remote, desired, state, run);
  if (!node.remote) return createNode(node, desired, state, run);

  let health = adapter.health?.(node.remote);
  // Left alone until it settles; the observe that found it is fresh, so no read is needed to say so.
  if (opts.requeue && progressOf(health)) return progressOf(health);
  if (health?.state === 'progressing' && !health.waitsForUpdate) {
    await waitReady(node, run, true);
    health = adapter.health?.(node.remote);
  }
  if (health?.state === 'failed' && adapter.heal) {
    return heal(
      node,
      health.reason,
      run,
      (n) => followUp(n, run),
      (n, d, mk) => createOnce(n, d, mk, run),
    );
  }
  // Settled now (a server a run before saw building, in requeue mode): Ready again even when nothing is left to change.
  if (health?.state === 'ready') state.ready = true;
  if (health?.state === 'ready' && state.heal?.length) {
    state.heal = [];
    state.gaveUp = undefined;
  }
  return updateNode(node, desired, state, run);
}

/** Taken over in this run: the ownership marker is its only write. */
async function adoptNode(node: Node, remote: Remote, desired: Record<string, unknown>, state: ResourceState, run: Run): Promise<Progress | undefined> {
  const { adapter, m } = node;
  const { opts } = run;
  // Requeue mode: a remark of several steps (a load balancer's children) goes on in a later run.
  const remarking = waitingOf(
    await run.retrying(node.address, () =>
      adapter.remark!(node.pc.ctx, remote, { owner: opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) }, m),
    ),
  );
  if (remarking) return remarking;
  node.remote = { ...remote, marker: { owner: opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) } };
  node.adopting = false;
  state.id = remote.id;
  run.emit('adopted', node.address, 'Adopted', `adopted ${m.kind} ${remote.id}: its ownership marker is written, nothing else`, { id: remote.id });
  return undefined;
}

/** Not there: created with its marker (a recreate when it was deleted outside KupenStack), then its follow-ups and the wait for it. */
async function createNode(node: Node, desired: Record<string, unknown>, state: ResourceState, run: Run): Promise<Progress | undefined> {
  const { adapter, m } = node;
  const knownBefore = state.id !== undefined;
  const previousId = state.id;
  const marker = { owner: run.opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) };
  const remote = run.create ? await run.create(node, desired, marker) : await createOnce(node, desired, marker, run);
  // An object this resource had before that is gone now was deleted outside KupenStack: say so, not just "created".
  if (knownBefore && !node.replacing && previousId !== remote.id)
    run.emit('created', node.address, 'Recreated', `${m.kind} ${previousId} was deleted outside KupenStack; created ${remote.id} in its place`, {
      id: remote.id,
    });
  else run.emit('created', node.address, 'Created', `created ${m.kind} ${remote.id}`, { id: remote.id });
  know(node.pc, node.ref, remote);
  state.id = remote.id;
  if (!node.replacing) run.count(node.address, 'created');
  if (knownBefore && adapter.heal && !node.replacing) {
    run.count(node.address, 'healed');
    recordHeal(state, { step: 'recreate', at: new Date().toISOString(), reason: 'deleted outside Git', result: 'done' }, false);
  }
  node.remote = remote;
  const after = async (): Promise<Progress | undefined> => (await followUp(node, run)) ?? (await waitReady(node, run));
  return run.bounded ? run.bounded(node, after) : after();
}

/** There and settled: the declared fields that differ are updated (drift corrected, a tag followed, a heal by field), then waited for. */
async function updateNode(node: Node, desired: Record<string, unknown>, state: ResourceState, run: Run): Promise<Progress | undefined> {
  const { adapter, m } = node;
  const ctx = node.pc.ctx;
  const diff = difference(adapter, desired, node.remote!);
  if (Object.keys(diff.updates).length === 0) {
    // The manifest dropped a `replace` field: nothing to change, but the marker must carry the hash of what is declared now.
    const remarking = diff.staleHash && adapter.remark ? await remark(node, desired, run) : undefined;
    if (remarking) return remarking;
    run.count(node.address, 'unchanged');
    return undefined;
  }
  const fields = Object.keys(diff.updates);
  const heals = adapter.heal !== undefined ? fields.find((k) => adapter.impact?.fields?.[k]?.heal) : undefined;
  // A moving reference (an OCI tag) that points elsewhere now: the update follows it, it corrects no drift.
  const follows = adapter.follows?.(m, desired, node.remote);
  const tagMoved = follows !== undefined && follows.from !== undefined && follows.from !== follows.to;
  const updated = await run.retrying(node.address, () => adapter.update(ctx, node.remote!, diff.updates, m));
  // An adapter that acted and looked once (a resize, an extend): the next run continues from what OpenStack shows.
  const later = waitingOf(updated);
  if (later) return later;
  moved(node, updated, run);
  if (tagMoved) run.emit('updated', node.address, 'TagMoved', `${follows.reference} moved from ${follows.from} to ${follows.to} (${fields.join(', ')})`);
  else run.emit('updated', node.address, diff.drift.some((d) => !d.immutable) && !heals ? 'DriftCorrected' : 'Updated', fields.join(', '));
  const corrected = diff.drift.filter((d) => !d.immutable).map((d) => d.path);
  if (!tagMoved && corrected.length > 0) run.emit('drift-corrected', node.address, 'DriftCorrected', `set ${corrected.join(', ')} back to the declared values`);
  if (heals) {
    run.count(node.address, 'healed');
    recordHeal(
      state,
      {
        step: adapter.impact!.fields![heals]!.heal!,
        at: new Date().toISOString(),
        reason: `${heals.replace(/_/g, ' ')} was ${String(node.remote!.fields[heals])}`,
        result: 'done',
      },
      false,
    );
  } else {
    run.count(node.address, 'updated');
  }
  const remarking = diff.staleHash && adapter.remark ? await remark(node, desired, run) : undefined;
  return remarking ?? waitReady(node, run);
}

/**
 * A create is never repeated blindly: after a failure that may have reached
 * OpenStack (a conflict, a lost connection, a 5xx, or a refusal the kind says
 * our own earlier create can cause) the marked object is looked up first
 * and adopted if it is there. When no answer came in time (a timeout, a
 * gateway's 502/504) the service may still be working on the create: a lookup that finds nothing proves nothing, so the create is not
 * sent again in this run (the next run adopts or creates it).
 */
export async function createOnce(node: Node, desired: Record<string, unknown>, marker: Marker, run: Run): Promise<Remote> {
  let adopted: Remote | undefined;
  const created = await retry(
    async () => {
      try {
        const { ctx } = node.pc;
        const timeoutMs = (): number => ctx.cloud.session.transport.timeoutMs;
        return await journaled(run.opts.journal, ctx.cloud, [node.address], timeoutMs, async (cloud) =>
          node.adapter.create(await sentWith(ctx, cloud), node.m, desired, marker),
        );
      } catch (err) {
        if (!(err instanceof OpenStackError) || !(err.conflict || err.transient || node.adapter.refusedByTwin?.(err))) throw err;
        let found: Remote[];
        try {
          found = await node.adapter.observe(node.pc.ctx);
        } catch {
          // Without the lookup nothing says the object is not there: never create again blind.
          throw new LostCreate(err);
        }
        adopted = found.find((r) => r.marker?.owner === run.opts.owner && r.marker.ref === node.ref);
        if (adopted) return adopted;
        if (answerLost(err)) throw new LostCreate(err);
        throw err;
      }
    },
    {
      retries: run.opts.transientRetries,
      baseMs: 1000,
      maxMs: 15_000,
      retryable: (err) => err instanceof OpenStackError && err.transient && !err.conflict && !(err instanceof LostCreate),
      onRetry: (err, _attempt, delay) => run.emit('retrying', node.address, 'TransientError', `${(err as Error).message} (in ${(delay / 1000).toFixed(1)} s)`),
      signal: run.opts.signal,
    },
  );
  if (adopted === created) run.emit('adopted', node.address, 'Adopted', `adopted ${created.id}, created by an earlier attempt`, { id: created.id });
  return created;
}

/** Where a kind's work queues: its service's slots (KindAdapter.service), or its own. */
export function laneOf(adapter: KindAdapter): string {
  return adapter.service ?? adapter.kind;
}

/** Fields a create leaves for later (tags, rules, attachments, uploads) are set right away, or by a later run once OpenStack is done with the object (requeue mode). */
export async function followUp(node: Node, run: Run): Promise<Progress | undefined> {
  const health = node.adapter.health?.(node.remote!);
  if (health?.state === 'progressing' && !health.waitsForUpdate) {
    const progress = await waitReady(node, run);
    if (progress) return progress;
  }
  const desired = await node.adapter.desired(node.m, node.pc.ctx);
  const diff = difference(node.adapter, desired, node.remote!);
  if (Object.keys(diff.updates).length === 0) return undefined;
  const updated = await run.retrying(node.address, () => node.adapter.update(node.pc.ctx, node.remote!, diff.updates, node.m));
  moved(node, updated, run);
  return waitingOf(updated);
}

/** The marker rewritten with the hash of what is declared now (a dropped `replace` field); waiting when a remark of several steps goes on later. */
async function remark(node: Node, desired: Record<string, unknown>, run: Run): Promise<Progress | undefined> {
  const { adapter, m } = node;
  const marker = { owner: run.opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) };
  return waitingOf(await run.retrying(node.address, () => adapter.remark!(node.pc.ctx, node.remote!, marker, m)));
}

/** An update that gave the manifest a new object (an OCI tag move): ids and state follow it. */
function moved(node: Node, next: void | Remote | Waiting, run: Run): void {
  if (!next || 'waiting' in next) return;
  node.remote = next;
  know(node.pc, node.ref, next);
  (run.opts.resources[node.address] ??= {}).id = next.id;
}
