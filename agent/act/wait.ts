import { KupenstackError } from '../errors.ts';
import type { KindAdapter } from '../kinds/kit/adapter.ts';
import { WriteHeld } from '../openstack/errors.ts';
import { poll } from '../util/poll.ts';
import type { ProjectContext } from './context.ts';
import { defaultLookAgainMs, progressOf, type Progress } from './progress.ts';
import type { Node, Run } from './run.ts';

/**
 * Re-reads the object (it was just acted on) until it is healthy: polls in
 * wait mode; in requeue mode looks once and answers the progress, so no
 * slot is held while OpenStack works. A failure is thrown for the next
 * run's heal, or returned when the caller heals it now.
 */
export async function waitReady(node: Node, run: Run, tolerateFailed = false): Promise<Progress | undefined> {
  const { adapter } = node;
  if (!adapter.health || !adapter.get || !node.remote) return undefined;
  const timeoutMs = run.opts.readyTimeoutMs;
  let lastReason = '';
  const look = async (): Promise<true | Progress> => {
    const current = await adapter.get!(node.pc.ctx, node.remote!.id);
    // Deleted under our feet: waiting longer cannot help; the next run creates it again.
    if (current === undefined)
      throw new KupenstackError(
        'resource.gone',
        `${node.m.kind} ${node.remote!.id} disappeared while waiting for it to become ready; the next run creates it again`,
      );
    node.remote = current;
    const health = adapter.health!(node.remote);
    const state = (run.opts.resources[node.address] ??= {});
    state.ready = health.state === 'ready';
    if (health.state === 'failed' && !tolerateFailed)
      throw new KupenstackError('resource.failed', `${node.m.kind} ${node.remote.id} failed: ${health.reason}; the next run heals it by its policy`);
    const progress = progressOf(health);
    if (progress) lastReason = progress.reason;
    return progress ?? true;
  };
  if (run.opts.requeue) {
    const answer = await look();
    return answer === true ? undefined : answer;
  }
  await poll(async () => ((await look()) === true ? true : undefined), {
    timeoutMs,
    initialDelayMs: 500,
    maxDelayMs: 5_000,
    signal: run.opts.signal,
    onTimeout: () => new KupenstackError('resource.timeout', `${node.m.kind} ${node.remote!.id} not ready after ${timeoutMs / 1000} s (${lastReason})`),
  });
  return undefined;
}

/**
 * Deletion is asynchronous for servers, volumes and images: waits until the
 * object is gone, or in requeue mode looks once and answers the progress
 * (the next run deletes again what it still finds, and looks again).
 */
export async function waitGone(adapter: KindAdapter, pc: ProjectContext, id: string, run: Run): Promise<Progress | undefined> {
  if (!adapter.health || !adapter.get) return undefined;
  const timeoutMs = run.opts.readyTimeoutMs;
  if (run.opts.requeue) {
    const left = await adapter.get(pc.ctx, id);
    return left === undefined ? undefined : { reason: `${adapter.kind} ${id} is being deleted (${left.status ?? 'still there'})`, afterMs: defaultLookAgainMs };
  }
  await poll(async () => ((await adapter.get!(pc.ctx, id)) === undefined ? true : undefined), {
    timeoutMs,
    initialDelayMs: 300,
    maxDelayMs: 3_000,
    signal: run.opts.signal,
    onTimeout: () => new KupenstackError('resource.timeout', `${id} still exists ${timeoutMs / 1000} s after its deletion`),
  });
  return undefined;
}

/** A write the cloud client's gate held (openstack/transport.ts): not sent, so its object is progressing, not failed. */
export function heldWrite(err: unknown): Progress | undefined {
  return err instanceof WriteHeld ? err.progress : undefined;
}
