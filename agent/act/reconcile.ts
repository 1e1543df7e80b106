import { setTimeout as sleep } from 'node:timers/promises';
import { KupenstackError } from '../errors.ts';
import { knownAfterApply, type KindAdapter, type Remote } from '../kinds/adapter.ts';
import type { Manifest } from '../model/manifest.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { Marker } from '../ownership/marker.ts';
import { changeOf } from '../plan/change.ts';
import type { Change, Drift, Held } from '../plan/plan.ts';
import type { HealAttempt, State } from '../status/state.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { PendingReference, projectContext, type ProjectContext } from './context.ts';
import { difference, replaceHash } from './diff.ts';
import { compareObserved, observedHash, StalePlanError, type ObservedState } from './observed.ts';
import { nextHeal } from './heal-policy.ts';
import { ensureProjects, ownedProjects, type Project } from './projects.ts';

export interface ReconcileOptions {
  cloud: OpenStackCloud;
  adapters: ReadonlyMap<string, KindAdapter>;
  /** Kinds, referenced kinds first: the reverse is the order to delete pruned objects in. */
  kindOrder: string[];
  owner: string;
  projectPrefix: string;
  domainId: string;
  role: string;
  revision: string;
  prune: boolean;
  allowMassDelete: boolean;
  /** Share of the owned objects a revision may delete before it is held (0.5 = 50 %). */
  massDeleteThreshold: number;
  concurrency: number;
  /** How long to wait for an object to become ready (a server ACTIVE, an image active). */
  readyTimeoutMs: number;
  /** Retries of an action after a transient OpenStack error (5xx, 409 busy, quota). */
  transientRetries: number;
  state: State;
  log: (line: string) => void;
  signal?: AbortSignal;
  /** Plan only: observe and compare, record every change, write nothing. */
  dryRun?: boolean;
  /** `apply --plan`: the observed state the plan was computed against; any difference stops the run before its first object write. */
  expectObserved?: ObservedState;
}

export interface ApplyError {
  address: string;
  code: string;
  message: string;
  requestId?: string;
}

export interface ApplyReport {
  revision: string;
  created: number;
  updated: number;
  replaced: number;
  deleted: number;
  healed: number;
  unchanged: number;
  held: Held[];
  errors: ApplyError[];
  apiCalls: { read: number; write: number };
  drift: Drift[];
  warnings: string[];
  /** Every change, applied or (dry run) planned, in execution order. */
  changes: Change[];
  /** The observed objects this run compared with (a saved plan's staleness check). */
  observed: ObservedState;
}

interface Node {
  address: string;
  m: Manifest;
  adapter: KindAdapter;
  pc: ProjectContext;
  ref: string;
  remote?: Remote;
  /** Objects found by import: observed, never changed or deleted. */
  imported: boolean;
  /** The old object was deleted in phase A: the create is the second half of a replacement. */
  replacing?: boolean;
}

/**
 * Makes OpenStack equal to a validated revision: observe once per kind and
 * project, delete what is replaced, create and update in dependency order with
 * bounded concurrency, heal failed objects by policy, then prune what this
 * owner created and no longer declares (held when it is too much at once).
 */
export async function reconcile(rev: ValidatedRevision, opts: ReconcileOptions): Promise<ApplyReport> {
  const { cloud, adapters, owner, log } = opts;
  const readsBefore = cloud.counters.read;
  const writesBefore = cloud.counters.write;
  const report: ApplyReport = { revision: opts.revision, created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0, held: [], errors: [], apiCalls: { read: 0, write: 0 }, drift: [], warnings: [], changes: [], observed: {} };
  const fail = (address: string, err: unknown): void => {
    const e = err instanceof KupenstackError ? err : new KupenstackError('internal', err instanceof Error ? err.message : String(err), { cause: err });
    report.errors.push({ address, code: e.code, message: `${address}: ${e.message}`, ...(err instanceof OpenStackError && err.requestId ? { requestId: err.requestId } : {}) });
    log(`error   ${address}: ${e.message}`);
  };

  const resources = rev.manifests.filter((m) => adapters.has(m.kind) && m.metadata.namespace);
  const namespaces = [...new Set(resources.map((m) => m.metadata.namespace!))];
  const projects = new Map<string, Project>();
  const contexts = new Map<string, ProjectContext>();
  if (opts.dryRun) {
    // A plan creates nothing, not even projects: namespaces without one read with the agent's own scope.
    for (const p of await ownedProjects(cloud, owner)) if (opts.prune || namespaces.includes(p.namespace)) projects.set(p.namespace, p);
    const own = (await cloud.whoami()).projectId ?? '';
    for (const ns of namespaces.filter((n) => !projects.has(n))) {
      const future: Project = { namespace: ns, id: knownAfterApply(`project ${opts.projectPrefix}${ns}`), name: `${opts.projectPrefix}${ns}` };
      contexts.set(ns, await projectContext(cloud, future, owner, opts.signal, true, own));
    }
  } else {
    for (const [ns, p] of await ensureProjects(cloud, namespaces, { owner, prefix: opts.projectPrefix, domainId: opts.domainId, role: opts.role })) projects.set(ns, p);
    if (opts.prune) for (const p of await ownedProjects(cloud, owner)) if (!projects.has(p.namespace)) projects.set(p.namespace, p);
  }
  for (const p of projects.values()) contexts.set(p.namespace, await projectContext(cloud, p, owner, opts.signal, opts.dryRun));

  // Observe: one list per kind per project.
  const declaredKinds = new Map<string, Set<string>>();
  for (const m of resources) {
    const set = declaredKinds.get(m.metadata.namespace!) ?? new Set<string>();
    set.add(m.kind);
    declaredKinds.set(m.metadata.namespace!, set);
  }
  const observed = new Map<string, Remote>();
  const duplicates: { address: string; remote: Remote }[] = [];
  let ownedTotal = 0;
  await pool(
    [...projects.values()].flatMap((p) => [...adapters.values()].filter((a) => opts.prune || declaredKinds.get(p.namespace)?.has(a.kind)).map((a) => ({ p, a }))),
    opts.concurrency,
    async ({ p, a }: { p: Project; a: KindAdapter }) => {
      const pc = contexts.get(p.namespace)!;
      for (const remote of await a.observe(pc.ctx)) {
        if (!remote.marker || remote.marker.owner !== owner) continue;
        const address = `${p.namespace}/${remote.marker.ref}`;
        ownedTotal++;
        if (observed.has(address)) duplicates.push({ address, remote });
        else observed.set(address, remote);
        pc.ids.set(remote.marker.ref, remote.id);
      }
    },
  );
  for (const d of duplicates) report.warnings.push(`${d.address}: more than one OpenStack object carries this marker (${d.remote.id} besides ${observed.get(d.address)?.id ?? '?'}); the extra one is pruned`);

  // Nodes for the declared resources; imports resolve to ids and are only observed.
  const nodes = new Map<string, Node>();
  for (const m of resources) {
    const pc = contexts.get(m.metadata.namespace!)!;
    const adapter = adapters.get(m.kind)!;
    const ref = `${m.kind}/${m.metadata.name}`;
    const node: Node = { address: m.address, m, adapter, pc, ref, remote: observed.get(m.address), imported: m.spec.import !== undefined };
    nodes.set(m.address, node);
    if (node.imported) {
      try {
        const found = await resolveImport(node);
        pc.ids.set(ref, found.id);
        node.remote = found;
        if (m.spec.managementPolicy !== 'unmanaged') report.warnings.push(`${m.address}: import is observe-only; KupenStack never changes or deletes an object it did not create`);
      } catch (err) {
        fail(m.address, err);
      }
    }
    if (node.remote && !node.imported) opts.state.resources[m.address] = { ...opts.state.resources[m.address], id: node.remote.id };
  }

  for (const [address, remote] of observed) report.observed[address] = observedHash(remote);
  for (const node of nodes.values()) if (node.imported && node.remote) report.observed[node.address] = observedHash(node.remote);
  if (opts.expectObserved) {
    const differences = compareObserved(opts.expectObserved, report.observed);
    if (differences.length > 0) throw new StalePlanError(differences);
  }

  // Prune candidates: ours, no longer declared.
  const gone = opts.prune ? [...observed.entries()].filter(([address]) => !nodes.has(address)) : [];
  for (const [address] of gone.filter(([a]) => opts.state.resources[a]?.onDelete === 'detach')) report.warnings.push(`${address}: no longer declared and left in OpenStack (onDelete: detach)`);
  const prunable = gone.filter(([a]) => opts.state.resources[a]?.onDelete !== 'detach').map(([address, remote]) => ({ address, remote }));
  const extraCopies = duplicates.filter((d) => opts.prune || nodes.has(d.address));
  if (prunable.length > 0 && !opts.allowMassDelete && ownedTotal > 0 && prunable.length / ownedTotal > opts.massDeleteThreshold) {
    for (const p of prunable) report.held.push({ address: p.address, action: 'delete', reason: `this revision deletes ${prunable.length} of ${ownedTotal} owned objects (more than ${Math.round(opts.massDeleteThreshold * 100)} %); confirm with --allow-mass-delete` });
    log(`held    ${prunable.length} deletions (mass-delete guard)`);
    prunable.length = 0;
  }

  // Phase A: decide replacements with the ids known now, delete the old objects, dependents first.
  const order = rev.order.filter((a) => nodes.has(a));
  const toReplace: Node[] = [];
  for (const address of order) {
    const node = nodes.get(address)!;
    if (!node.remote || node.imported) continue;
    try {
      const desired = await node.adapter.desired(node.m, node.pc.ctx);
      const diff = difference(node.adapter, desired, node.remote);
      if (diff.replace) {
        toReplace.push(node);
        if (opts.dryRun) report.changes.push(changeOf(node.address, node.adapter, 'replace', diff.fields, node.remote.id));
      }
    } catch (err) {
      if (!(err instanceof PendingReference)) fail(address, err);
    }
  }
  for (const node of toReplace.reverse()) {
    if (opts.dryRun) {
      report.replaced++;
      node.replacing = true;
      node.pc.ids.delete(node.ref);
      node.remote = undefined;
      continue;
    }
    try {
      log(`replace ${node.address} (deleting ${node.remote!.id})`);
      await retrying(opts, () => node.adapter.delete(node.pc.ctx, node.remote!));
      await waitGone(node.adapter, node.pc, node.remote!.id, opts);
      node.pc.ids.delete(node.ref);
      node.remote = undefined;
      node.replacing = true;
      report.replaced++;
    } catch (err) {
      fail(node.address, err);
    }
  }

  // Phase B: create, update and heal in dependency order.
  const deferred: Node[] = [];
  const done = new Set<string>();
  const run = async (node: Node): Promise<void> => {
    try {
      await reconcileNode(node, report, opts);
    } catch (err) {
      if (err instanceof PendingReference) deferred.push(node);
      else fail(node.address, err);
    }
  };
  await dag(order, (a) => [...(rev.graph.dependsOn.get(a) ?? [])].filter((d) => nodes.has(d)), opts.concurrency, async (address) => {
    const node = nodes.get(address)!;
    if (!node.imported) await run(node);
    done.add(address);
  });
  // Weak references (security groups naming each other) resolve once every target exists.
  for (const node of deferred.splice(0)) await run(node);
  for (const node of deferred) fail(node.address, new KupenstackError('ref.unresolved', 'a referenced object could not be created; see the errors above'));
  // Objects with weak references (rules naming groups created later in this run) get their last fields now.
  const weakHolders = new Set(rev.references.filter((r) => r.weak).map((r) => r.from.address));
  for (const address of order.filter((a) => weakHolders.has(a) && !opts.dryRun)) {
    const node = nodes.get(address)!;
    if (!node.remote || node.imported) continue;
    try {
      await followUp(node, opts);
    } catch (err) {
      fail(address, err);
    }
  }

  // Phase C: prune, dependents first.
  const rank = new Map(opts.kindOrder.map((k, i) => [k, i]));
  const deletions = [...prunable, ...extraCopies].sort((a, b) => (rank.get(kindOf(b.address)) ?? 0) - (rank.get(kindOf(a.address)) ?? 0));
  for (const group of groupBy(deletions, (d) => kindOf(d.address))) {
    await pool(group, opts.concurrency, async ({ address, remote }) => {
      const adapter = adapters.get(kindOf(address))!;
      const pc = contexts.get(address.split('/')[0]!)!;
      if (opts.dryRun) {
        report.changes.push(changeOf(address, adapter, 'delete', [], remote.id));
        report.deleted++;
        return;
      }
      try {
        log(`delete  ${address} (${remote.id})`);
        await retrying(opts, () => adapter.delete(pc.ctx, remote));
        await waitGone(adapter, pc, remote.id, opts);
        report.deleted++;
        delete opts.state.resources[address];
      } catch (err) {
        fail(address, err);
      }
    });
  }

  report.apiCalls = { read: cloud.counters.read - readsBefore, write: cloud.counters.write - writesBefore };
  return report;
}

async function reconcileNode(node: Node, report: ApplyReport, opts: ReconcileOptions): Promise<void> {
  const { adapter, m, pc } = node;
  const ctx = pc.ctx;
  const state = (opts.state.resources[node.address] ??= {});
  const desired = await adapter.desired(m, ctx);
  state.onDelete = m.spec.onDelete === 'detach' ? 'detach' : undefined;

  if (!node.remote) {
    const knownBefore = state.id !== undefined;
    if (opts.dryRun) {
      if (!node.replacing) {
        report.changes.push(changeOf(node.address, adapter, 'create', Object.entries(desired).map(([path, after]) => ({ path, before: null, after, forcesReplacement: false }))));
        report.created++;
      }
      return;
    }
    const marker = { owner: opts.owner, ref: node.ref, specHash: replaceHash(adapter, desired) };
    opts.log(`create  ${node.address}`);
    const remote = await createOnce(node, desired, marker, opts);
    pc.ids.set(node.ref, remote.id);
    state.id = remote.id;
    if (!node.replacing) report.created++;
    if (knownBefore && adapter.heal) {
      report.healed++;
      recordHeal(state, { step: 'recreate', at: new Date().toISOString(), reason: 'deleted outside Git', result: 'done' }, false);
    }
    node.remote = remote;
    await followUp(node, opts);
    await waitReady(node, opts);
    return;
  }

  let health = adapter.health?.(node.remote);
  if (health?.state === 'progressing' && !health.waitsForUpdate && !opts.dryRun) {
    await waitReady(node, opts, true);
    health = adapter.health?.(node.remote);
  }
  if (health?.state === 'failed' && adapter.heal) {
    if (opts.dryRun) {
      const decision = nextHeal(m, state.heal ?? [], Date.now());
      if (decision.step) {
        const change = changeOf(node.address, adapter, 'heal', [], node.remote.id);
        change.heal = { step: decision.step, attempt: decision.attempt, reason: health.reason };
        if (decision.step !== 'reboot') change.reasons.push(adapter.impact?.onDelete ?? { code: 'object-deleted', message: `${decision.step} starts the object again` });
        change.destructive = decision.step !== 'reboot';
        report.changes.push(change);
        report.healed++;
      } else report.warnings.push(`${node.address}: failed (${health.reason}); ${decision.giveUp ?? decision.wait ?? ''}`);
      return;
    }
    await heal(node, health.reason, report, opts);
    return;
  }
  if (health?.state === 'ready' && state.heal?.length) {
    state.heal = [];
    state.gaveUp = undefined;
  }
  const diff = difference(adapter, desired, node.remote);
  if (opts.dryRun && diff.replace) {
    // Replaced because something it references is replaced (its id changes).
    report.changes.push(changeOf(node.address, adapter, 'replace', diff.fields, node.remote.id));
    report.replaced++;
    return;
  }
  for (const d of diff.drift.filter((x) => x.immutable)) {
    report.drift.push({ address: node.address, ...d });
    report.warnings.push(`${node.address}: ${d.path} is ${JSON.stringify(d.actual)} in OpenStack but ${JSON.stringify(d.expected)} in Git, and cannot change in place; left alone (change the manifest to replace it)`);
  }
  if (Object.keys(diff.updates).length === 0) {
    report.unchanged++;
    return;
  }
  for (const d of diff.drift.filter((x) => !x.immutable)) report.drift.push({ address: node.address, ...d });
  if (opts.dryRun) {
    report.changes.push(changeOf(node.address, adapter, 'update', diff.fields, node.remote.id));
    report.updated++;
    return;
  }
  opts.log(`update  ${node.address}: ${Object.keys(diff.updates).join(', ')}`);
  const healsPower = adapter.heal !== undefined && Object.keys(diff.updates).some((k) => /power/.test(k));
  await retrying(opts, () => adapter.update(ctx, node.remote!, diff.updates, m));
  if (healsPower) {
    report.healed++;
    recordHeal(state, { step: 'reboot', at: new Date().toISOString(), reason: `power state was ${String(node.remote.fields.power_state)}`, result: 'done' }, false);
  } else {
    report.updated++;
  }
  await waitReady(node, opts);
}

/**
 * A create is never repeated blindly: after a failure that may have reached
 * OpenStack (a conflict, a lost connection, a 5xx) the marked object is looked
 * up first and adopted if it is there.
 */
async function createOnce(node: Node, desired: Record<string, unknown>, marker: Marker, opts: ReconcileOptions): Promise<Remote> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await node.adapter.create(node.pc.ctx, node.m, desired, marker);
    } catch (err) {
      if (!(err instanceof OpenStackError) || !(err.conflict || err.transient)) throw err;
      const mine = (await node.adapter.observe(node.pc.ctx)).find((r) => r.marker?.owner === opts.owner && r.marker.ref === node.ref);
      if (mine) return mine;
      if (err.conflict || attempt >= opts.transientRetries) throw err;
      const delay = Math.min(1000 * 2 ** attempt, 15_000) * (0.5 + Math.random());
      opts.log(`retry   ${node.address} after ${err.message} (in ${(delay / 1000).toFixed(1)} s)`);
      await sleep(delay, undefined, { signal: opts.signal });
    }
  }
}

/** Fields a create leaves for later (tags, rules, attachments, uploads) are set right away. */
async function followUp(node: Node, opts: ReconcileOptions): Promise<void> {
  const health = node.adapter.health?.(node.remote!);
  if (health?.state === 'progressing' && !health.waitsForUpdate) await waitReady(node, opts);
  const desired = await node.adapter.desired(node.m, node.pc.ctx);
  const diff = difference(node.adapter, desired, node.remote!);
  if (Object.keys(diff.updates).length > 0) await retrying(opts, () => node.adapter.update(node.pc.ctx, node.remote!, diff.updates, node.m));
}

async function heal(node: Node, reason: string, report: ApplyReport, opts: ReconcileOptions): Promise<void> {
  const state = (opts.state.resources[node.address] ??= {});
  const decision = nextHeal(node.m, state.heal ?? [], Date.now());
  if (decision.giveUp) {
    state.gaveUp = decision.giveUp;
    throw new KupenstackError('heal.gave-up', `${reason}; ${decision.giveUp}`);
  }
  if (decision.wait) {
    report.warnings.push(`${node.address}: failed (${reason}); ${decision.wait}`);
    return;
  }
  const step = decision.step!;
  const attempt: HealAttempt = { step, at: new Date().toISOString(), reason, result: 'done' };
  opts.log(`heal    ${node.address}: ${step} (attempt ${decision.attempt}) because ${reason}`);
  try {
    if (step === 'recreate') {
      await node.adapter.delete(node.pc.ctx, node.remote!);
      await waitGone(node.adapter, node.pc, node.remote!.id, opts);
      const desired = await node.adapter.desired(node.m, node.pc.ctx);
      node.remote = await createOnce(node, desired, { owner: opts.owner, ref: node.ref, specHash: replaceHash(node.adapter, desired) }, opts);
      node.pc.ids.set(node.ref, node.remote.id);
      state.id = node.remote.id;
      await followUp(node, opts);
    } else {
      await node.adapter.heal!(node.pc.ctx, node.remote!, step, node.m);
    }
    await waitReady(node, opts);
    report.healed++;
    // The episode is over: the next failure starts again from a reboot.
    state.heal = [];
    state.gaveUp = undefined;
  } catch (err) {
    attempt.result = 'failed';
    attempt.error = err instanceof Error ? err.message : String(err);
    throw err;
  } finally {
    if (attempt.result === 'failed') recordHeal(state, attempt);
    else state.healHistory = [...(state.healHistory ?? []), attempt].slice(-20);
  }
}

function recordHeal(state: State['resources'][string], attempt: HealAttempt, episode = true): void {
  if (episode) state.heal = [...(state.heal ?? []), attempt].slice(-20);
  state.healHistory = [...(state.healHistory ?? []), attempt].slice(-20);
}

async function resolveImport(node: Node): Promise<Remote> {
  const spec = node.m.spec.import as { id?: string; filter?: Record<string, unknown> };
  if (spec.id) {
    const found = await node.adapter.get?.(node.pc.ctx, spec.id);
    if (!found) throw new KupenstackError('import.not-found', `import.id ${spec.id}: no such ${node.m.kind} in OpenStack; fix the id`);
    return found;
  }
  if (!node.adapter.find) throw new KupenstackError('import.unsupported', `${node.m.kind} cannot be imported by filter; import it by id`);
  const matches = await node.adapter.find(node.pc.ctx, spec.filter ?? {});
  if (matches.length !== 1) throw new KupenstackError('import.ambiguous', `import.filter matches ${matches.length} objects; it must match exactly one: narrow the filter or import by id`);
  return matches[0]!;
}

/**
 * Polls (re-reading the object first: it was just acted on) until it is
 * healthy. A failure is thrown for the next run's heal, or returned when the
 * caller heals it now.
 */
async function waitReady(node: Node, opts: ReconcileOptions, tolerateFailed = false): Promise<void> {
  const { adapter } = node;
  if (!adapter.health || !adapter.get || !node.remote) return;
  const end = Date.now() + opts.readyTimeoutMs;
  let delay = 500;
  for (;;) {
    node.remote = (await adapter.get(node.pc.ctx, node.remote.id)) ?? node.remote;
    const health = adapter.health(node.remote);
    const state = (opts.state.resources[node.address] ??= {});
    state.ready = health.state === 'ready';
    if (health.state === 'ready') return;
    if (health.state === 'failed') {
      if (tolerateFailed) return;
      throw new KupenstackError('resource.failed', `${node.m.kind} ${node.remote.id} failed: ${health.reason}; the next run heals it by its policy`);
    }
    if (health.waitsForUpdate) return;
    if (Date.now() > end) throw new KupenstackError('resource.timeout', `${node.m.kind} ${node.remote.id} not ready after ${opts.readyTimeoutMs / 1000} s (${health.reason})`);
    await sleep(delay, undefined, { signal: opts.signal });
    delay = Math.min(delay * 1.5, 5_000);
  }
}

/** Deletion is asynchronous for servers, volumes and images: wait until the object is gone. */
async function waitGone(adapter: KindAdapter, pc: ProjectContext, id: string, opts: ReconcileOptions): Promise<void> {
  if (!adapter.health || !adapter.get) return;
  const end = Date.now() + opts.readyTimeoutMs;
  let delay = 300;
  while ((await adapter.get(pc.ctx, id)) !== undefined) {
    if (Date.now() > end) throw new KupenstackError('resource.timeout', `${id} still exists ${opts.readyTimeoutMs / 1000} s after its deletion`);
    await sleep(delay, undefined, { signal: opts.signal });
    delay = Math.min(delay * 1.5, 3_000);
  }
}

/** Retries an action after a transient OpenStack error, with jittered exponential backoff. */
async function retrying<T>(opts: ReconcileOptions, action: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await action();
    } catch (err) {
      const transient = err instanceof OpenStackError && err.transient && !err.conflict;
      if (!transient || attempt >= opts.transientRetries) throw err;
      const delay = Math.min(1000 * 2 ** attempt, 15_000) * (0.5 + Math.random());
      opts.log(`retry   after ${(err as Error).message} (in ${(delay / 1000).toFixed(1)} s)`);
      await sleep(delay, undefined, { signal: opts.signal });
    }
  }
}

function kindOf(address: string): string {
  return address.split('/')[1] ?? '';
}

function groupBy<T>(items: T[], key: (t: T) => string): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let last: string | undefined;
  for (const item of items) {
    const k = key(item);
    if (k !== last && current.length) {
      groups.push(current);
      current = [];
    }
    current.push(item);
    last = k;
  }
  if (current.length) groups.push(current);
  return groups;
}

/** Runs `work` over items, at most `limit` at a time. */
export async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Runs every node once all of its dependencies have run, at most `limit` at a time. */
export async function dag(order: string[], deps: (node: string) => string[], limit: number, work: (node: string) => Promise<void>): Promise<void> {
  const waiting = new Map(order.map((n) => [n, new Set(deps(n))]));
  const dependents = new Map<string, string[]>();
  for (const [n, ds] of waiting) for (const d of ds) dependents.set(d, [...(dependents.get(d) ?? []), n]);
  const ready = order.filter((n) => waiting.get(n)!.size === 0);
  let running = 0;
  await new Promise<void>((resolve, reject) => {
    const pump = (): void => {
      if (ready.length === 0 && running === 0) return resolve();
      while (running < limit && ready.length > 0) {
        const n = ready.shift()!;
        running++;
        work(n)
          .then(() => {
            running--;
            for (const d of dependents.get(n) ?? []) {
              const set = waiting.get(d)!;
              set.delete(n);
              if (set.size === 0) ready.push(d);
            }
            pump();
          })
          .catch(reject);
      }
    };
    pump();
  });
}
