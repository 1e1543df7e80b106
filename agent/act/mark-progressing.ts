import { setCondition } from '../status/conditions.ts';
import type { Progress } from './progress.ts';
import type { Node, Run } from './run.ts';

/**
 * An object OpenStack is still working on: Ready False and Reconciling True
 * with reason Progressing (kstatus's "in progress", not a failure), and the
 * outcome's `progressing` tells the front end when to look again.
 */
export async function markProgressing(run: Run, address: string, progress: Progress, node?: Node): Promise<void> {
  const status = (run.opts.resources[address] ??= {});
  status.ready = false;
  status.conditions = setCondition(status.conditions ?? [], { type: 'Ready', status: 'False', reason: 'Progressing', message: progress.reason });
  const again = `${progress.reason}; looked at again in ${Math.ceil(progress.afterMs / 1000)} s`;
  status.conditions = setCondition(status.conditions, { type: 'Reconciling', status: 'True', reason: 'Progressing', message: again });
  status.conditions = setCondition(status.conditions, { type: 'Stalled', status: 'False', reason: 'Progressing', message: '' });
  if (node?.remote)
    status.observed = { id: node.remote.id, ...(node.remote.status ? { status: node.remote.status } : {}), ...node.adapter.report?.(node.remote) };
  run.out.progressing.push({ address, ...progress });
  await run.settle(address, status);
}
