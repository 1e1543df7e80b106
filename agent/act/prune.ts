import { dag } from '../util/concurrency.ts';
import { deleteIfEmpty } from './empty-projects.ts';
import type { Execution } from './execution.ts';
import { laneOf } from './reconcile-node.ts';
import { markProgressing } from './mark-progressing.ts';
import { heldWrite, waitGone } from './wait.ts';
import { waitingOf } from '../kinds/kit/adapter.ts';

/**
 * Phase C of an execution: prune what is no longer declared, dependents
 * first. A deletion waits only for the deletions of the kinds that reference
 * its kind (ports before their subnets and networks, not before flavors),
 * each service in its own slots.
 */
export async function prunePhase(x: Execution): Promise<void> {
  const { decision, seen, nodes, scopes, run, fail } = x;
  const { opts } = run;
  const rank = new Map(opts.kindOrder.map((k, i) => [k, i]));
  const kindOf = (address: string): string => address.split('/')[1] ?? '';
  const deletions = decision.plan.changes
    .filter((c) => c.action === 'delete' && c.id)
    .map((c) => ({
      address: c.address,
      remote:
        seen.inventory.owned.get(c.address)?.id === c.id
          ? seen.inventory.owned.get(c.address)!
          : seen.inventory.duplicates.find((d) => d.remote.id === c.id)!.remote,
    }))
    .sort((a, b) => (rank.get(kindOf(b.address)) ?? 0) - (rank.get(kindOf(a.address)) ?? 0));
  const pruned = [...new Set(deletions.map((d) => kindOf(d.address)))];
  // One node per deletion, plus one per pruned kind that is done once all of that kind's deletions are.
  const kindDone = (kind: string): string => `kind\n${kind}`;
  const deletionKeys = deletions.map((_, i) => String(i));
  // Requeue mode: pruned kinds with a deletion OpenStack is still working on → when to look again.
  const going = new Map<string, number>();
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
      const kind = kindOf(address);
      const adapter = opts.adapters.get(kind)!;
      const pc = scopes.get(address.split('/')[0]!)!;
      try {
        // Requeue mode: what references this kind is still being deleted (a server still holding its port), so this deletion waits for a later run.
        const before = pruned.find((k) => k !== kind && opts.kindDeps.get(k)?.has(kind) && going.has(k));
        const waiting = before ? { reason: `waits for the deletion of its ${before} objects, still in progress`, afterMs: going.get(before)! } : undefined;
        // A deletion of several steps (a load balancer's children, one at a time) goes on in a later run.
        const deleting = waiting ?? waitingOf(await run.retrying(address, () => adapter.delete(pc.ctx, remote)));
        const progress = deleting ?? (await waitGone(adapter, pc, remote.id, run));
        if (progress) {
          going.set(kind, Math.min(going.get(kind) ?? progress.afterMs, progress.afterMs));
          await markProgressing(run, address, progress);
          return;
        }
        run.emit('deleted', address, 'Pruned', `deleted ${remote.id}: no longer declared`, { id: remote.id });
        run.count(address, 'deleted');
        if (!nodes.has(address)) {
          delete opts.resources[address];
          await run.settle(address, undefined);
        }
      } catch (err) {
        // A write the gate held: nothing was sent; the next run deletes it.
        const held = heldWrite(err);
        if (held) {
          going.set(kind, Math.min(going.get(kind) ?? held.afterMs, held.afterMs));
          await markProgressing(run, address, held);
        } else fail(address, err);
      }
    },
    { laneOf: (key) => (key.startsWith('kind\n') ? 'kind' : laneOf(opts.adapters.get(kindOf(deletions[Number(key)]!.address))!)) },
  );
}

/** A namespace gone from the revision: its project goes too, once nothing (ours or anyone's) is left in it. */
export async function deleteEmptyProjects(x: Execution): Promise<void> {
  const { seen, run, fail } = x;
  const { opts, out } = run;
  for (const p of seen.projects.filter((x) => seen.scopes.get(x.namespace)?.future === false && !seen.namespaces.includes(x.namespace))) {
    if (out.errors.some((e) => e.address.startsWith(`${p.namespace}/`))) continue;
    try {
      const result = await run.retrying(p.namespace, () => deleteIfEmpty(opts.cloud, p));
      if (result.deleted)
        run.emit(
          'deleted',
          p.namespace,
          'ProjectDeleted',
          `deleted project ${p.name} (${p.id}): namespace ${p.namespace} left the revision and nothing is left in it`,
          { id: p.id },
        );
      else
        run.emit(
          'held',
          p.namespace,
          'ProjectNotEmpty',
          `kept project ${p.name} (${p.id}) of namespace ${p.namespace}, which left the revision: it still holds ${result.left.join(', ')}`,
        );
    } catch (err) {
      fail(p.namespace, err);
    }
  }
}
