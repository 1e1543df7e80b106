import { adopts } from '../plan/decide.ts';
import { KupenstackError } from '../errors.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { Decision } from '../plan/decide.ts';
import { setCondition } from '../status/conditions.ts';
import { retry } from '../../lib/retry.ts';
import { limiterPerKey } from '../util/concurrency.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import { projectContext, type ProjectContext } from './context.ts';
import type { Observation } from './observe.ts';
import { BulkCreator } from './bulk.ts';
import { refusalOf } from './refusals.ts';
import { ensureProjects } from './projects.ts';
import type { ExecuteOptions, Node, Outcome, Run } from './run.ts';
import { convergePhase } from './converge.ts';
import type { Execution } from './execution.ts';
import { deleteEmptyProjects, prunePhase } from './prune.ts';
import { createOnce, laneOf } from './reconcile-node.ts';
import { replacePhase } from './replace.ts';

/**
 * Runs a plan (Terraform's apply of a planfile): creates the projects the
 * plan needs, then phase A deletes what is replaced (detaching what uses it
 * first, dependents first), phase B creates, updates and heals in dependency
 * order with bounded concurrency, phase C prunes in reverse dependency order.
 * Each object is evaluated again when its turn comes, with the ids that
 * exist by then: that is how "known after apply" becomes known.
 */
export async function execute(rev: ValidatedRevision, decision: Decision, seen: Observation, opts: ExecuteOptions): Promise<Outcome> {
  const out: Outcome = {
    ...{ created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0, errors: [] },
    ...{ drift: [...decision.plan.drift], warnings: [...decision.plan.warnings], images: [...decision.plan.images], kinds: {}, progressing: [] },
  };
  const run = runOf(opts, out);
  const fail = failure(run, opts);
  // Imports are resolved once, by observe; every other planning error comes back when the object's turn comes.
  const imports = new Set(decision.declared.filter((m) => m.spec.import !== undefined).map((m) => m.address));
  const failed = new Set(decision.errors.filter((e) => imports.has(e.address)).map((e) => e.address));
  for (const e of decision.errors) {
    if (!failed.has(e.address)) continue;
    fail(e.address, e.error);
    // Written now: an import has no step of its own that would write it (a refused import must not go unreported).
    await run.settle(e.address, opts.resources[e.address]);
  }
  // A namespace that got no project (act/no-project.ts): each of its objects says why, and gets no node.
  for (const m of decision.declared) {
    const blocked = failed.has(m.address) ? undefined : seen.blocked.get(m.metadata.namespace ?? '');
    if (!blocked) continue;
    fail(m.address, blocked);
    await run.settle(m.address, opts.resources[m.address]);
  }

  const scopes = await withProjects(decision, seen, opts);
  const nodes = nodesOf(decision, seen, opts, scopes, failed);
  const x: Execution = { rev, decision, seen, run, nodes, scopes, order: rev.order.filter((a) => nodes.has(a)), fail, progressing: new Map() };
  await replacePhase(x);
  await convergePhase(x);
  await prunePhase(x);
  if (opts.deleteEmptyProjects) await deleteEmptyProjects(x);
  return out;
}

/** What every phase calls back into: events, status, retries of transient errors, counts, bulk creates and the per-service bound. */
function runOf(opts: ExecuteOptions, out: Outcome): Run {
  const run: Run = {
    opts,
    out,
    emit: (type, address, reason, message, extra = {}) => {
      const kind = address.split('/')[1];
      const warning = type === 'failed' || type === 'gave-up' || type === 'held' || type === 'retrying';
      const at = new Date().toISOString();
      opts.events({
        type,
        address,
        reason,
        message,
        severity: warning ? 'warning' : 'normal',
        revision: opts.revision,
        at,
        ...(kind ? { kind } : {}),
        ...extra,
      });
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
        onRetry: (err, _attempt, delay) =>
          run.emit('retrying', address ?? '', 'TransientError', `${(err as Error).message} (in ${(delay / 1000).toFixed(1)} s)`),
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
  return run;
}

/** Records a failure on its object: the error, its count, Ready (and Stalled when retrying cannot help), an event; the run goes on. */
function failure(run: Run, opts: ExecuteOptions): (address: string, err: unknown) => void {
  return (address, err) => {
    // A refusal (egress policy, import) is Stalled with its own reason; the egress policy's words even when a client wrapped them.
    const refused = refusalOf(err);
    const e =
      refused?.error ??
      (err instanceof KupenstackError ? err : new KupenstackError('internal', err instanceof Error ? err.message : String(err), { cause: err }));
    run.out.errors.push({
      address,
      code: e.code,
      message: `${address}: ${e.message}`,
      ...(err instanceof OpenStackError && err.requestId ? { requestId: err.requestId } : {}),
    });
    run.count(address, 'errors');
    const status = (opts.resources[address] ??= {});
    status.conditions = setCondition(status.conditions ?? [], {
      type: 'Ready',
      status: 'False',
      reason: e.code === 'heal.gave-up' ? 'HealGaveUp' : 'ApplyFailed',
      message: e.message,
    });
    // Retrying cannot fix a refusal: Stalled until the spec or the admin's rules change; so is a VM healing gave up on.
    const stalled = refused?.reason ?? (e.code === 'heal.gave-up' ? 'HealGaveUp' : undefined);
    if (stalled) {
      status.conditions = setCondition(status.conditions, { type: 'Ready', status: 'False', reason: stalled, message: e.message });
      status.conditions = setCondition(status.conditions, { type: 'Stalled', status: 'True', reason: stalled, message: e.message });
      // kstatus reads all three: nothing is under way until a person acts.
      status.conditions = setCondition(status.conditions, { type: 'Reconciling', status: 'False', reason: stalled, message: 'waiting for a person to act' });
    }
    run.emit(e.code === 'heal.gave-up' ? 'gave-up' : 'failed', address, refused?.reason ?? e.code, e.message);
  };
}

/** One node per declared object (a failed import has none), with what observe found of it; its id is in its status from the start. */
function nodesOf(
  decision: Decision,
  seen: Observation,
  opts: ExecuteOptions,
  scopes: ReadonlyMap<string, ProjectContext>,
  failed: ReadonlySet<string>,
): Map<string, Node> {
  const nodes = new Map<string, Node>();
  for (const m of decision.declared) {
    if (failed.has(m.address) && m.spec.import !== undefined) continue;
    if (seen.blocked.has(m.metadata.namespace ?? '')) continue;
    const node: Node = {
      address: m.address,
      m,
      adapter: opts.adapters.get(m.kind)!,
      pc: scopes.get(m.metadata.namespace!)!,
      ref: `${m.kind}/${m.metadata.name}`,
      remote: seen.inventory.imports.get(m.address) ?? seen.inventory.owned.get(m.address),
      imported: m.spec.import !== undefined && !adopts(m),
    };
    // Taken over in this run: its first write is the marker (reconcile-node.ts).
    if (adopts(m) && node.remote && seen.inventory.owned.get(m.address)?.id !== node.remote.id) node.adopting = true;
    nodes.set(m.address, node);
    if (node.remote && !node.imported) opts.resources[m.address] = { ...opts.resources[m.address], id: node.remote.id };
  }
  return nodes;
}

/** The plan's namespaces that have no project get one now (the run's first write); each scope as the run uses it. */
async function withProjects(decision: Decision, seen: Observation, opts: ExecuteOptions): Promise<Map<string, ProjectContext>> {
  const scopes = new Map<string, ProjectContext>(seen.scopes);
  const future = [...seen.scopes.entries()].filter(([ns, s]) => s.future && !seen.blocked.has(ns)).map(([ns]) => ns);
  const projects = await ensureProjects(
    opts.cloud,
    seen.namespaces.filter((ns) => !seen.blocked.has(ns)),
    {
      owner: opts.owner,
      prefix: opts.projectPrefix,
      domainId: opts.domainId,
      role: opts.role,
      trustKnown: opts.trustKnownProjects === true,
      adopt: new Set(decision.declared.filter(adopts).map((m) => m.metadata.namespace ?? '')),
      ...(seen.projectNames ? { names: seen.projectNames } : {}),
      ...(seen.borrowed.length > 0 ? { borrowed: seen.borrowed } : {}),
    },
    seen.projects,
  );
  for (const ns of future) {
    const p = projects.get(ns)!;
    const before = seen.scopes.get(ns)!;
    const pc = await projectContext(
      opts.cloud,
      p,
      opts.owner,
      opts.signal,
      p.id,
      before.ctx.secrets,
      before.ctx.imageVerify,
      before.ctx.trustKnown,
      before.ctx.images,
      before.ctx.refresh,
    );
    for (const [ref, id] of before.ids) pc.ids.set(ref, id);
    for (const [ref, remote] of before.remotes) pc.remotes.set(ref, remote);
    for (const [ref, remote] of before.imports) pc.imports.set(ref, remote);
    scopes.set(ns, pc);
    // The new project's first token (seconds from a busy Keystone) is fetched while the first creates (admin-scoped bulks, flavors) run, not when a project-scoped call first waits for it.
    void pc.ctx.apis.network.base().catch(() => undefined);
  }

  // Adapters look once instead of waiting (kinds/kit/look-again.ts).
  if (opts.requeue) for (const pc of scopes.values()) pc.ctx.requeue = true;
  return scopes;
}
