import { KupenstackError } from '../errors.ts';
import type { KindAdapter, Remote } from '../kinds/adapter.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { Marker } from '../ownership/marker.ts';
import type { Decision } from '../plan/decide.ts';
import { difference, replaceHash } from '../plan/diff.ts';
import { setCondition } from '../status/conditions.ts';
import { retry } from '../../lib/retry.ts';
import { dag, limiterPerKey } from '../util/concurrency.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { know, PendingReference, projectContext, type ProjectContext } from './context.ts';
import { heal, recordHeal } from './heal.ts';
import type { Observation } from './observe.ts';
import { BulkCreator, maxBulk } from './bulk.ts';
import { journaled } from './journaled.ts';
import { refusalOf } from './refusals.ts';
import { answerLost, LostCreate } from './lost-create.ts';
import { deleteIfEmpty } from './empty-projects.ts';
import { ensureProjects } from './projects.ts';
import { waitGone, waitReady } from './wait.ts';
import type { ExecuteOptions, Node, Outcome, Run } from './run.ts';

export type { ApplyError, ExecuteOptions, KindCounts, Node, Outcome, Run } from './run.ts';

/**
 * Runs a plan (Terraform's apply of a planfile): creates the projects the
 * plan needs, then phase A deletes what is replaced (detaching what uses it
 * first, dependents first), phase B creates, updates and heals in dependency
 * order with bounded concurrency, phase C prunes in reverse dependency order.
 * Each object is evaluated again when its turn comes, with the ids that
 * exist by then: that is how "known after apply" becomes known.
 */
export async function execute(rev: ValidatedRevision, decision: Decision, seen: Observation, opts: ExecuteOptions): Promise<Outcome> {
  const out: Outcome = { created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0, errors: [], drift: [...decision.plan.drift], warnings: [...decision.plan.warnings], images: [...decision.plan.images], kinds: {} };
  const run: Run = {
    opts,
    out,
    emit: (type, address, reason, message, extra = {}) => {
      const kind = address.split('/')[1];
      opts.events({ type, address, reason, message, severity: type === 'failed' || type === 'gave-up' || type === 'held' || type === 'retrying' ? 'warning' : 'normal', revision: opts.revision, at: new Date().toISOString(), ...(kind ? { kind } : {}), ...extra });
    },
    settle: (address, status) => opts.state.putResource(address, status),
    retrying: (address, action) => {
      // An interrupted run (Ctrl-C, SIGTERM, lost leadership) lets the calls in flight finish and starts no new one.
      opts.signal?.throwIfAborted();
      return retry(() => action(), {
        retries: opts.transientRetries,
        baseMs: 1000,
        maxMs: 15_000,
        retryable: (err) => err instanceof OpenStackError && err.transient && !err.conflict,
        onRetry: (err, _attempt, delay) => run.emit('retrying', address ?? '', 'TransientError', `${(err as Error).message} (in ${(delay / 1000).toFixed(1)} s)`),
        signal: opts.signal,
      });
    },
    count: (address, key) => {
      const kind = address.split('/')[1] ?? '';
      const k = (out.kinds[kind] ??= { created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0, errors: 0 });
      k[key]++;
      if (key !== 'errors') out[key]++;
    },
  };
  const bulk = new BulkCreator(run, (n, d, mk) => createOnce(n, d, mk, run));
  run.create = (n, d, mk) => bulk.create(n, d, mk);
  const inLane = limiterPerKey<string>(opts.concurrency);
  run.bounded = (node, work) => inLane(laneOf(node.adapter))(work);
  const fail = (address: string, err: unknown): void => {
    // A refusal (egress policy, import) is Stalled with its own reason; the egress policy's words even when a client wrapped them.
    const refused = refusalOf(err);
    const e = refused?.error ?? (err instanceof KupenstackError ? err : new KupenstackError('internal', err instanceof Error ? err.message : String(err), { cause: err }));
    out.errors.push({ address, code: e.code, message: `${address}: ${e.message}`, ...(err instanceof OpenStackError && err.requestId ? { requestId: err.requestId } : {}) });
    run.count(address, 'errors');
    const status = (opts.resources[address] ??= {});
    status.conditions = setCondition(status.conditions ?? [], { type: 'Ready', status: 'False', reason: e.code === 'heal.gave-up' ? 'HealGaveUp' : 'ApplyFailed', message: e.message });
    if (e.code === 'heal.gave-up') status.conditions = setCondition(status.conditions, { type: 'Stalled', status: 'True', reason: 'HealGaveUp', message: e.message });
    // Retrying cannot fix a refusal: Stalled until the spec or the admin's rules change.
    if (refused) status.conditions = setCondition(setCondition(status.conditions, { type: 'Ready', status: 'False', reason: refused.reason, message: e.message }), { type: 'Stalled', status: 'True', reason: refused.reason, message: e.message });
    run.emit(e.code === 'heal.gave-up' ? 'gave-up' : 'failed', address, refused?.reason ?? e.code, e.message);
  };
  // Imports are resolved once, by observe; every other planning error comes back when the object's turn comes.
  const imports = new Set(decision.declared.filter((m) => m.spec.import !== undefined).map((m) => m.address));
  const failed = new Set(decision.errors.filter((e) => imports.has(e.address)).map((e) => e.address));
  for (const e of decision.errors) {
    if (!failed.has(e.address)) continue;
    fail(e.address, e.error);
    // Written now: an import has no step of its own that would write it (a refused import must not go unreported).
    await run.settle(e.address, opts.resources[e.address]);
  }

  // Projects: the plan's namespaces that have none get one now (the first write of the run).
  const scopes = new Map<string, ProjectContext>(seen.scopes);
  const future = [...seen.scopes.entries()].filter(([, s]) => s.future).map(([ns]) => ns);
  const projects = await ensureProjects(opts.cloud, seen.namespaces, { owner: opts.owner, prefix: opts.projectPrefix, domainId: opts.domainId, role: opts.role, trustKnown: opts.trustKnownProjects === true }, seen.projects);
  for (const ns of future) {
    const p = projects.get(ns)!;
    const before = seen.scopes.get(ns)!;
    const pc = await projectContext(opts.cloud, p, opts.owner, opts.signal, p.id, before.ctx.secrets, before.ctx.imageVerify, before.ctx.trustKnown);
    for (const [ref, id] of before.ids) pc.ids.set(ref, id);
    for (const [ref, remote] of before.remotes) pc.remotes.set(ref, remote);
    for (const [ref, remote] of before.imports) pc.imports.set(ref, remote);
    scopes.set(ns, pc);
    // The new project's first token (seconds from a busy Keystone) is fetched while the first creates (admin-scoped bulks, flavors) run, not when a project-scoped call first waits for it.
    void pc.ctx.apis.network.base().catch(() => undefined);
  }

  const nodes = new Map<string, Node>();
  for (const m of decision.declared) {
    if (failed.has(m.address) && m.spec.import !== undefined) continue;
    const node: Node = {
      address: m.address,
      m,
      adapter: opts.adapters.get(m.kind)!,
      pc: scopes.get(m.metadata.namespace!)!,
      ref: `${m.kind}/${m.metadata.name}`,
      remote: seen.inventory.imports.get(m.address) ?? seen.inventory.owned.get(m.address),
      imported: m.spec.import !== undefined,
    };
    nodes.set(m.address, node);
    if (node.remote && !node.imported) opts.resources[m.address] = { ...opts.resources[m.address], id: node.remote.id };
  }
  const changeOf = new Map(decision.plan.changes.filter((c) => c.action !== 'delete').map((c) => [c.address, c]));

  // Phase A: detach what uses a replaced object, then delete the old objects, dependents first.
  const order = rev.order.filter((a) => nodes.has(a));
  const toReplace = order.filter((a) => changeOf.get(a)?.action === 'replace').map((a) => nodes.get(a)!);
  for (const change of decision.plan.changes.filter((c) => c.detachFrom?.length)) {
    const node = nodes.get(change.address);
    if (!node?.remote || !node.adapter.release) continue;
    const ids = change.detachFrom!.flatMap((a) => nodes.get(a)?.remote?.id ?? []);
    try {
      await run.retrying(node.address, () => node.adapter.release!(node.pc.ctx, node.remote!, ids));
      run.emit('detached', node.address, 'DetachedForReplace', `detached from ${change.detachFrom!.join(', ')} while replaced`);
      node.remote = (await node.adapter.get?.(node.pc.ctx, node.remote.id)) ?? node.remote;
    } catch (err) {
      fail(node.address, err);
    }
  }
  for (const node of toReplace.reverse()) {
    try {
      const old = node.remote!;
      await run.retrying(node.address, () => node.adapter.delete(node.pc.ctx, old));
      await waitGone(node.adapter, node.pc, old.id, run);
      run.emit('replaced', node.address, 'Replacing', `deleted ${old.id} to create it again`, { id: old.id });
      node.pc.ids.delete(node.ref);
      node.remote = undefined;
      node.replacing = true;
      run.count(node.address, 'replaced');
    } catch (err) {
      fail(node.address, err);
    }
  }

  // Phase B: create, update and heal in dependency order.
  const deferred: Node[] = [];
  const step = async (node: Node): Promise<void> => {
    try {
      await reconcileNode(node, run);
      const status = (opts.resources[node.address] ??= {});
      if (status.ready !== false) status.conditions = setCondition(status.conditions ?? [], { type: 'Ready', status: 'True', reason: 'Reconciled', message: `applied at ${opts.revision}` });
      status.conditions = setCondition(status.conditions ?? [], { type: 'Reconciling', status: 'False', reason: 'Reconciled', message: '' });
      status.conditions = setCondition(status.conditions, { type: 'Stalled', status: 'False', reason: 'Reconciled', message: '' });
      status.lastSyncTime = new Date().toISOString();
      // What an operator looks for, as the kind reports it (power state, addresses, digest…).
      if (node.remote) status.observed = { id: node.remote.id, ...(node.remote.status ? { status: node.remote.status } : {}), ...node.adapter.report?.(node.remote) };
      await run.settle(node.address, status);
    } catch (err) {
      if (err instanceof PendingReference) deferred.push(node);
      else {
        fail(node.address, err);
        await run.settle(node.address, opts.resources[node.address]);
      }
    }
  };
  // Creates that go out as one bulk POST (Neutron) start together and take one slot.
  const batchOf = (address: string): string | undefined => {
    const node = nodes.get(address)!;
    return !node.remote && !node.imported && node.adapter.bulkCreate ? `${node.m.metadata.namespace ?? ''}\n${node.m.kind}` : undefined;
  };
  await dag(
    order,
    (a) => [...(rev.graph.dependsOn.get(a) ?? [])].filter((d) => nodes.has(d)),
    opts.concurrency,
    async (address) => {
      const node = nodes.get(address)!;
      if (!node.imported) await step(node);
    },
    { batchOf, maxBatch: maxBulk, laneOf: (address) => laneOf(nodes.get(address)!.adapter) },
  );
  // Weak references (security groups naming each other) resolve once every target exists.
  for (const node of deferred.splice(0)) await step(node);
  for (const node of deferred) fail(node.address, new KupenstackError('ref.unresolved', 'a referenced object could not be created; see the errors above'));
  // Objects with weak references (rules naming groups created later in this run) get their last fields now.
  const weakHolders = new Set(rev.references.filter((r) => r.weak).map((r) => r.from.address));
  for (const address of order.filter((a) => weakHolders.has(a))) {
    const node = nodes.get(address)!;
    if (!node.remote || node.imported) continue;
    try {
      await followUp(node, run);
    } catch (err) {
      fail(address, err);
    }
  }

  // Phase C: prune, dependents first. A deletion waits only for the deletions of the kinds that
  // reference its kind (ports before their subnets and networks, not before flavors), each service in its own slots.
  const rank = new Map(opts.kindOrder.map((k, i) => [k, i]));
  const kindOf = (address: string): string => address.split('/')[1] ?? '';
  const deletions = decision.plan.changes
    .filter((c) => c.action === 'delete' && c.id)
    .map((c) => ({ address: c.address, remote: seen.inventory.owned.get(c.address)?.id === c.id ? seen.inventory.owned.get(c.address)! : seen.inventory.duplicates.find((d) => d.remote.id === c.id)!.remote }))
    .sort((a, b) => (rank.get(kindOf(b.address)) ?? 0) - (rank.get(kindOf(a.address)) ?? 0));
  const pruned = [...new Set(deletions.map((d) => kindOf(d.address)))];
  // One node per deletion, plus one per pruned kind that is done once all of that kind's deletions are.
  const kindDone = (kind: string): string => `kind\n${kind}`;
  const deletionKeys = deletions.map((_, i) => String(i));
  await dag(
    [...deletionKeys, ...pruned.map(kindDone)],
    (key) => {
      if (key.startsWith('kind\n')) return deletionKeys.filter((i) => kindOf(deletions[Number(i)]!.address) === key.slice(5));
      const kind = kindOf(deletions[Number(key)]!.address);
      return pruned.filter((k) => k !== kind && opts.kindDeps.get(k)?.has(kind)).map(kindDone);
    },
    opts.concurrency,
    async (key) => {
      if (key.startsWith('kind\n')) return;
      const { address, remote } = deletions[Number(key)]!;
      const adapter = opts.adapters.get(kindOf(address))!;
      const pc = scopes.get(address.split('/')[0]!)!;
      try {
        await run.retrying(address, () => adapter.delete(pc.ctx, remote));
        await waitGone(adapter, pc, remote.id, run);
        run.emit('deleted', address, 'Pruned', `deleted ${remote.id}: no longer declared`, { id: remote.id });
        run.count(address, 'deleted');
        if (!nodes.has(address)) {
          delete opts.resources[address];
          await run.settle(address, undefined);
        }
      } catch (err) {
        fail(address, err);
      }
    },
    { laneOf: (key) => (key.startsWith('kind\n') ? 'kind' : laneOf(opts.adapters.get(kindOf(deletions[Number(key)]!.address))!)) },
  );

  // A namespace gone from the revision: its project goes too, once nothing (ours or anyone's) is left in it.
  if (opts.deleteEmptyProjects) {
    for (const p of seen.projects.filter((x) => seen.scopes.get(x.namespace)?.future === false && !seen.namespaces.includes(x.namespace))) {
      if (out.errors.some((e) => e.address.startsWith(`${p.namespace}/`))) continue;
      try {
        const result = await run.retrying(p.namespace, () => deleteIfEmpty(opts.cloud, p));
        if (result.deleted) run.emit('deleted', p.namespace, 'ProjectDeleted', `deleted project ${p.name} (${p.id}): namespace ${p.namespace} left the revision and nothing is left in it`, { id: p.id });
        else run.emit('held', p.namespace, 'ProjectNotEmpty', `kept project ${p.name} (${p.id}) of namespace ${p.namespace}, which left the revision: it still holds ${result.left.join(', ')}`);
      } catch (err) {
        fail(p.namespace, err);
      }
    }
  }
  return out;
}

async function reconcileNode(node: Node, run: Run): Promise<void> {
  const { adapter, m, pc } = node;
  const { opts } = run;
  const ctx = pc.ctx;
  opts.signal?.throwIfAborted();
  const state = (opts.resources[node.address] ??= {});
  const desired = await adapter.desired(m, ctx);
  state.onDelete = m.spec.onDelete === 'detach' ? 'detach' : undefined;

  if (!node.remote) {
    const knownBefore = state.id !== undefined;
    const previousId = state.id;
    const marker = { owner: opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) };
    const remote = run.create ? await run.create(node, desired, marker) : await createOnce(node, desired, marker, run);
    // An object this resource had before that is gone now was deleted outside KupenStack: say so, not just "created".
    if (knownBefore && !node.replacing && previousId !== remote.id) run.emit('created', node.address, 'Recreated', `${m.kind} ${previousId} was deleted outside KupenStack; created ${remote.id} in its place`, { id: remote.id });
    else run.emit('created', node.address, 'Created', `created ${m.kind} ${remote.id}`, { id: remote.id });
    know(pc, node.ref, remote);
    state.id = remote.id;
    if (!node.replacing) run.count(node.address, 'created');
    if (knownBefore && adapter.heal && !node.replacing) {
      run.count(node.address, 'healed');
      recordHeal(state, { step: 'recreate', at: new Date().toISOString(), reason: 'deleted outside Git', result: 'done' }, false);
    }
    node.remote = remote;
    const after = async (): Promise<void> => {
      await followUp(node, run);
      await waitReady(node, run);
    };
    await (run.bounded ? run.bounded(node, after) : after());
    return;
  }

  let health = adapter.health?.(node.remote);
  if (health?.state === 'progressing' && !health.waitsForUpdate) {
    await waitReady(node, run, true);
    health = adapter.health?.(node.remote);
  }
  if (health?.state === 'failed' && adapter.heal) {
    await heal(node, health.reason, run, (n) => followUp(n, run), (n, d, mk) => createOnce(n, d, mk, run));
    return;
  }
  if (health?.state === 'ready' && state.heal?.length) {
    state.heal = [];
    state.gaveUp = undefined;
  }
  const diff = difference(adapter, desired, node.remote);
  if (Object.keys(diff.updates).length === 0) {
    // The manifest dropped a `replace` field: nothing to change, but the marker must carry the hash of what is declared now.
    if (diff.staleHash && adapter.remark) await run.retrying(node.address, () => adapter.remark!(ctx, node.remote!, { owner: opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) }));
    run.count(node.address, 'unchanged');
    return;
  }
  const fields = Object.keys(diff.updates);
  const heals = adapter.heal !== undefined ? fields.find((k) => adapter.impact?.fields?.[k]?.heal) : undefined;
  // A moving reference (an OCI tag) that points elsewhere now: the update follows it, it corrects no drift.
  const follows = adapter.follows?.(m, desired, node.remote);
  const tagMoved = follows !== undefined && follows.from !== undefined && follows.from !== follows.to;
  moved(node, await run.retrying(node.address, () => adapter.update(ctx, node.remote!, diff.updates, m)), run);
  if (tagMoved) run.emit('updated', node.address, 'TagMoved', `${follows.reference} moved from ${follows.from} to ${follows.to} (${fields.join(', ')})`);
  else run.emit('updated', node.address, diff.drift.some((d) => !d.immutable) && !heals ? 'DriftCorrected' : 'Updated', fields.join(', '));
  if (!tagMoved && diff.drift.some((d) => !d.immutable)) run.emit('drift-corrected', node.address, 'DriftCorrected', `set ${diff.drift.filter((d) => !d.immutable).map((d) => d.path).join(', ')} back to the declared values`);
  if (heals) {
    run.count(node.address, 'healed');
    recordHeal(state, { step: adapter.impact!.fields![heals]!.heal!, at: new Date().toISOString(), reason: `${heals.replace(/_/g, ' ')} was ${String(node.remote.fields[heals])}`, result: 'done' }, false);
  } else {
    run.count(node.address, 'updated');
  }
  if (diff.staleHash && adapter.remark) await run.retrying(node.address, () => adapter.remark!(ctx, node.remote!, { owner: opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) }));
  await waitReady(node, run);
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
        return await journaled(run.opts.journal, [node.address], () => node.pc.ctx.cloud.session.transport.timeoutMs, () => node.adapter.create(node.pc.ctx, node.m, desired, marker));
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
function laneOf(adapter: KindAdapter): string {
  return adapter.service ?? adapter.kind;
}

/** Fields a create leaves for later (tags, rules, attachments, uploads) are set right away. */
export async function followUp(node: Node, run: Run): Promise<void> {
  const health = node.adapter.health?.(node.remote!);
  if (health?.state === 'progressing' && !health.waitsForUpdate) await waitReady(node, run);
  const desired = await node.adapter.desired(node.m, node.pc.ctx);
  const diff = difference(node.adapter, desired, node.remote!);
  if (Object.keys(diff.updates).length > 0) moved(node, await run.retrying(node.address, () => node.adapter.update(node.pc.ctx, node.remote!, diff.updates, node.m)), run);
}

/** An update that gave the manifest a new object (an OCI tag move): ids and state follow it. */
function moved(node: Node, next: void | Remote, run: Run): void {
  if (!next) return;
  node.remote = next;
  know(node.pc, node.ref, next);
  (run.opts.resources[node.address] ??= {}).id = next.id;
}
