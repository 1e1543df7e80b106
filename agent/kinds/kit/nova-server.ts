import { KupenstackError } from '../../errors.ts';
import { OpenStackError } from '../../openstack/errors.ts';
import type { AdapterContext, Health } from './adapter.ts';
import { lookAgain } from './look-again.ts';
import type { Looked } from '../../../lib/progress.ts';

/**
 * What the VirtualMachine adapter needs to know about a Nova server's state
 * machine: statuses, power transitions, waiting, and the admin-only reset.
 */

export interface NovaServer {
  id: string;
  name: string;
  status: string;
  updated?: string;
  description?: string | null;
  metadata?: Record<string, string>;
  tags?: string[];
  /** `""` for a volume-backed server. */
  image?: { id?: string } | '';
  /** Since 2.47 an embedded copy of the flavor, without its id. */
  flavor?: { original_name?: string; vcpus?: number; ram?: number; disk?: number; ephemeral?: number; swap?: number | '' };
  key_name?: string | null;
  config_drive?: string | boolean;
  addresses?: Record<string, { addr?: string; 'OS-EXT-IPS-MAC:mac_addr'?: string; 'OS-EXT-IPS:type'?: string }[]>;
  fault?: { message?: string; details?: string; code?: number };
  'OS-EXT-AZ:availability_zone'?: string;
  'OS-EXT-STS:task_state'?: string | null;
  'OS-EXT-STS:vm_state'?: string;
  'OS-EXT-STS:power_state'?: number;
  'os-extended-volumes:volumes_attached'?: { id: string }[];
}

export type PowerState = 'running' | 'shutoff' | 'paused' | 'suspended';

const statusOfPower: Record<PowerState, string> = { running: 'ACTIVE', shutoff: 'SHUTOFF', paused: 'PAUSED', suspended: 'SUSPENDED' };
const settled = new Set(Object.values(statusOfPower));
const transitional = new Set(['BUILD', 'REBUILD', 'RESIZE', 'VERIFY_RESIZE', 'REVERT_RESIZE', 'MIGRATING', 'REBOOT', 'HARD_REBOOT', 'PASSWORD']);

/** Hypervisor power states (`OS-EXT-STS:power_state`) that mean "no guest is running". */
const noGuest: Record<number, string> = { 0: 'NOSTATE', 4: 'SHUTDOWN', 6: 'CRASHED' };

/** A resize nobody confirms stays in VERIFY_RESIZE forever (resize_confirm_window defaults to off). */
const unconfirmedResizeMs = 10 * 60_000;

/**
 * The declared power state a server is in. A server in BUILD counts as
 * running (where Nova takes it) so that a fresh server never looks like a
 * power-state change; error and other states are unknown.
 */
export function powerStateOf(s: NovaServer): PowerState | undefined {
  switch (s['OS-EXT-STS:vm_state']) {
    case 'building':
    case 'active':
      return 'running';
    case 'stopped':
      return 'shutoff';
    case 'paused':
      return 'paused';
    case 'suspended':
      return 'suspended';
    case 'resized':
      return s['OS-EXT-STS:power_state'] === 4 ? 'shutoff' : 'running';
    default:
      return undefined;
  }
}

export function serverHealth(s: NovaServer, now = Date.now()): Health {
  const task = s['OS-EXT-STS:task_state'];
  // On its way out (a replace, a prune, a recreate a run before sent): not a failure to heal again.
  if (task === 'deleting') return { state: 'progressing', reason: `${s.status} (deleting)` };
  if (s.status === 'ERROR') return { state: 'failed', reason: `server is in ERROR: ${faultOf(s)}` };
  if (s.status === 'VERIFY_RESIZE' && !task) {
    const since = Date.parse(s.updated ?? '');
    if (Number.isFinite(since) && now - since > unconfirmedResizeMs) return { state: 'failed', reason: `resize waiting for confirmation since ${s.updated}` };
    // The update confirms it (the flavor shows as unconfirmed): a run that looked once after the resize continues here.
    return { state: 'progressing', reason: 'VERIFY_RESIZE: the resize waits for its confirmation', waitsForUpdate: true };
  }
  if (transitional.has(s.status)) return { state: 'progressing', reason: task ? `${s.status} (${task})` : s.status };
  if (settled.has(s.status)) {
    if (task) return { state: 'progressing', reason: `${s.status} (${task})` };
    const power = s['OS-EXT-STS:power_state'];
    // Nova still says ACTIVE, the hypervisor has no guest: e.g. a compute host that lost its VMs.
    if (s.status === 'ACTIVE' && power !== undefined && noGuest[power])
      return { state: 'failed', reason: `Nova reports ACTIVE but the hypervisor reports power state ${noGuest[power]}` };
    return { state: 'ready' };
  }
  return { state: 'failed', reason: `server is ${s.status}${task ? ` (${task})` : ''}, not a state KupenStack keeps` };
}

function faultOf(s: NovaServer): string {
  const message = s.fault?.message;
  return message ? message : 'no fault recorded by Nova';
}

/** The one action that moves a settled server toward `want`; undefined when it is there. */
export function powerAction(status: string, want: PowerState): Record<string, null> | undefined {
  if (status === statusOfPower[want]) return undefined;
  // Nova leaves paused and suspended only back to ACTIVE, and pauses or suspends only from ACTIVE.
  if (status === 'PAUSED') return { unpause: null };
  if (status === 'SUSPENDED') return { resume: null };
  if (status === 'SHUTOFF') return { 'os-start': null };
  if (status === 'ACTIVE') return want === 'shutoff' ? { 'os-stop': null } : want === 'paused' ? { pause: null } : { suspend: null };
  return undefined;
}

export async function serverAction(ctx: AdapterContext, id: string, body: Record<string, unknown>): Promise<void> {
  await ctx.apis.compute.post(`/servers/${id}/action`, body, [200, 202, 204]);
}

export async function showServer(ctx: AdapterContext, id: string): Promise<NovaServer | undefined> {
  return (await ctx.apis.compute.find<{ server: NovaServer }>(`/servers/${id}`))?.server;
}

/** Bounded poll until `done` (one look in requeue mode, which may answer waiting); ERROR or the server vanishing ends it with an error. */
export async function waitForServer(
  ctx: AdapterContext,
  id: string,
  what: string,
  done: (s: NovaServer) => boolean,
  timeoutMs = 15 * 60_000,
): Promise<Looked<NovaServer>> {
  return lookAgain<NovaServer>(ctx, {
    what: `server ${id} waits for ${what}`,
    timeoutMs,
    look: async () => {
      const s = await showServer(ctx, id);
      if (!s) throw new KupenstackError('vm.gone', `server ${id} disappeared while waiting for ${what}`);
      if (done(s)) return { done: s };
      if (s.status === 'ERROR') throw new KupenstackError('vm.error', `server ${id} went to ERROR while waiting for ${what}: ${faultOf(s)}`);
      return { why: `still ${s.status}${s['OS-EXT-STS:task_state'] ? ` (${s['OS-EXT-STS:task_state']})` : ''}` };
    },
    onTimeout: (why) => new KupenstackError('vm.timeout', `server ${id} ${why} after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`),
  });
}

export const isSettled = (s: NovaServer): boolean => settled.has(s.status) && !s['OS-EXT-STS:task_state'];

/**
 * Clears ERROR and any stuck task state. os-resetState is admin-only, so it
 * goes through the agent's own admin scope (its token works on servers of
 * every project). Without admin rights it is skipped: Nova allows a hard
 * reboot and a rebuild from ERROR anyway.
 */
export async function resetToActive(ctx: AdapterContext, id: string): Promise<void> {
  const admin = await ctx.cloud.adminCompute();
  try {
    await admin.post(`/servers/${id}/action`, { 'os-resetState': { state: 'active' } }, [202]);
  } catch (err) {
    if (!(err instanceof OpenStackError && err.status === 403)) throw err;
  }
}
