import { KupenstackError } from '../errors.ts';
import { setCondition } from '../status/conditions.ts';
import { dag } from '../util/concurrency.ts';
import { maxBulk } from './bulk.ts';
import { PendingReference } from './context.ts';
import type { Execution } from './execution.ts';
import { followUp, laneOf, reconcileNode } from './reconcile-node.ts';
import { markProgressing } from './mark-progressing.ts';
import type { Node } from './run.ts';
import { heldWrite } from './wait.ts';

/**
 * Phase B of an execution: create, update and heal in dependency order with
 * bounded concurrency; each object is evaluated again when its turn comes,
 * with the ids that exist by then. Objects waiting on a weak reference
 * (security groups naming each other) come last.
 */
export async function convergePhase(x: Execution): Promise<void> {
  const { rev, nodes, order, run, fail } = x;
  const { opts } = run;
  const deferred: Node[] = [];
  // Requeue mode: what OpenStack is still working on, and what depends on it (acted on by a later run).
  const progressing = x.progressing;
  const dependsOn = (address: string): string[] => [...(rev.graph.dependsOn.get(address) ?? [])].filter((d) => nodes.has(d));
  const step = async (node: Node): Promise<void> => {
    try {
      // Its old object is still being deleted (replace phase): marked there already.
      if (progressing.has(node.address)) return;
      const waitingFor = dependsOn(node.address).find((d) => progressing.has(d));
      const progress = waitingFor
        ? { reason: `waits for ${waitingFor}, which is progressing`, afterMs: progressing.get(waitingFor)!.afterMs }
        : await reconcileNode(node, run);
      if (progress) {
        progressing.set(node.address, progress);
        await markProgressing(run, node.address, progress, node);
        return;
      }
      const status = (opts.resources[node.address] ??= {});
      if (status.ready !== false)
        status.conditions = setCondition(status.conditions ?? [], {
          type: 'Ready',
          status: 'True',
          reason: 'Reconciled',
          message: `applied at ${opts.revision}`,
        });
      status.conditions = setCondition(status.conditions ?? [], { type: 'Reconciling', status: 'False', reason: 'Reconciled', message: '' });
      status.conditions = setCondition(status.conditions, { type: 'Stalled', status: 'False', reason: 'Reconciled', message: '' });
      status.lastSyncTime = new Date().toISOString();
      // What an operator looks for, as the kind reports it (power state, addresses, digest…).
      if (node.remote)
        status.observed = { id: node.remote.id, ...(node.remote.status ? { status: node.remote.status } : {}), ...node.adapter.report?.(node.remote) };
      await run.settle(node.address, status);
    } catch (err) {
      // A write the gate held (the controller's finalizers, a journal line): nothing was sent; the next run goes on.
      const held = heldWrite(err);
      if (held) {
        progressing.set(node.address, held);
        await markProgressing(run, node.address, held, node);
      } else if (err instanceof PendingReference) deferred.push(node);
      else {
        fail(node.address, err);
        await run.settle(node.address, opts.resources[node.address]);
      }
    }
  };
  // Creates that go out as one bulk POST (Neutron) start together and take one slot.
  const batchOf = bulkBatches(nodes);
  await dag(
    order,
    dependsOn,
    opts.concurrency,
    async (address) => {
      const node = nodes.get(address)!;
      await (node.imported ? settleImport(node, run) : step(node));
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
    if (!node.remote || node.imported || progressing.has(address)) continue;
    try {
      // An adapter that acted and looked once: the next run continues from what OpenStack shows.
      const later = await followUp(node, run);
      if (later) await markProgressing(run, node.address, later, node);
    } catch (err) {
      fail(address, err);
    }
  }
}

/** An import is never written to, but it is Ready once found: a Sync's `wait` and a reader of its CR need to see that. */
async function settleImport(node: Node, run: Execution['run']): Promise<void> {
  const { opts } = run;
  const remote = node.remote;
  if (!remote) return;
  const known = opts.resources[node.address] ?? {};
  let conditions = setCondition(known.conditions ?? [], {
    type: 'Ready',
    status: 'True',
    reason: 'Imported',
    message: `imported ${remote.id} at ${opts.revision}`,
  });
  conditions = setCondition(conditions, { type: 'Reconciling', status: 'False', reason: 'Imported', message: '' });
  conditions = setCondition(conditions, { type: 'Stalled', status: 'False', reason: 'Imported', message: '' });
  const observed = { id: remote.id, ...(remote.status ? { status: remote.status } : {}), ...node.adapter.report?.(remote) };
  // The id is what observe found this run, shown to the reader; prune and adoption go by the marker, never by it.
  await run.settle(node.address, { ...known, id: remote.id, conditions, observed, lastSyncTime: new Date().toISOString() });
}

/** The bulk a node's create joins (namespace and kind), for a kind with bulk creates; none for an update or an import. */
function bulkBatches(nodes: ReadonlyMap<string, Node>): (address: string) => string | undefined {
  return (address) => {
    const node = nodes.get(address)!;
    return !node.remote && !node.imported && node.adapter.bulkCreate ? `${node.m.metadata.namespace ?? ''}\n${node.m.kind}` : undefined;
  };
}
