import type { Execution } from './execution.ts';
import { markProgressing } from './mark-progressing.ts';
import { waitGone } from './wait.ts';
import { waitingOf } from '../kinds/kit/adapter.ts';

/**
 * Phase A of an execution: what uses a replaced object is detached from it,
 * then the old objects are deleted, dependents first, so phase B creates
 * them again.
 */
export async function replacePhase(x: Execution): Promise<void> {
  const { decision, nodes, order, run, fail } = x;
  const changeOf = new Map(decision.plan.changes.filter((c) => c.action !== 'delete').map((c) => [c.address, c]));
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
      const deleting = waitingOf(await run.retrying(node.address, () => node.adapter.delete(node.pc.ctx, old)));
      const going = deleting ?? (await waitGone(node.adapter, node.pc, old.id, run));
      if (going) {
        // Requeue mode: created again by a later run, once OpenStack shows the old object gone (a create then, not a "deleted outside KupenStack").
        delete (run.opts.resources[node.address] ??= {}).id;
        x.progressing.set(node.address, going);
        await markProgressing(run, node.address, going, node);
        continue;
      }
      run.emit('replaced', node.address, 'Replacing', `deleted ${old.id} to create it again`, { id: old.id });
      node.pc.ids.delete(node.ref);
      node.remote = undefined;
      node.replacing = true;
      run.count(node.address, 'replaced');
    } catch (err) {
      fail(node.address, err);
    }
  }
}
