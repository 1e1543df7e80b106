import { KupenstackError } from '../../errors.ts';
import type { VirtualMachineSpec } from '../../model/kinds.generated.ts';
import type { AdapterContext, Waiting } from '../kit/adapter.ts';
import { isWaiting, type Looked } from '../../../lib/progress.ts';
import { isSettled, powerAction, serverAction, showServer, waitForServer, type NovaServer, type PowerState } from '../kit/nova-server.ts';
import { resolveFlavor } from './flavor.ts';
import { imageIdOf, isPortManifest } from './remote.ts';
import { userData } from './request.ts';
import { type NeutronPort, metaImage, uniqSorted } from './shapes.ts';

/** The updates that are Nova actions (resize, rebuild, power) or sub-resources (metadata, volume attachments, port groups). */

/** PAUSED and SUSPENDED servers can be neither resized nor rebuilt: back to ACTIVE first. */
async function wakeUp(ctx: AdapterContext, s: NovaServer): Promise<Looked<NovaServer>> {
  const action = s.status === 'PAUSED' ? { unpause: null } : s.status === 'SUSPENDED' ? { resume: null } : undefined;
  if (!action) return { done: s };
  await serverAction(ctx, s.id, action);
  return waitForServer(ctx, s.id, 'the server to be ACTIVE', (x) => isSettled(x) && x.status === 'ACTIVE');
}

/** Resize and confirm (a resize left unconfirmed, e.g. by a crash, is only confirmed); in requeue mode a later run goes on where Nova is. */
export async function resize(ctx: AdapterContext, current: NovaServer, spec: VirtualMachineSpec): Promise<Looked<NovaServer>> {
  const { id: flavorRef, view } = await resolveFlavor(ctx, spec);
  let s = current;
  if (s.status !== 'VERIFY_RESIZE') {
    const awake = await wakeUp(ctx, s);
    if (isWaiting(awake)) return awake;
    await serverAction(ctx, awake.done.id, { resize: { flavorRef } });
    const resized = await waitForServer(ctx, awake.done.id, `the resize to ${view.name}`, (x) => x.status === 'VERIFY_RESIZE' || isSettled(x));
    if (isWaiting(resized)) return resized;
    s = resized.done;
    // Nova puts a server whose resize could not start (no host, say) back as it was, without ERROR.
    if (s.status !== 'VERIFY_RESIZE')
      throw new KupenstackError(
        'vm.resize',
        `Nova did not resize server ${s.id} to flavor ${view.name}; its instance actions (openstack server event list) say why`,
      );
  }
  await serverAction(ctx, s.id, { confirmResize: null });
  return waitForServer(ctx, s.id, 'the resize confirmation', isSettled);
}

/**
 * Rebuilds from the declared image. Returns false when the server already
 * runs it and only the image record was missing (an adopted server).
 */
export async function rebuildImage(ctx: AdapterContext, id: string, spec: VirtualMachineSpec): Promise<Looked<boolean>> {
  const name = spec.imageRef?.name;
  if (!name) return { done: false };
  const imageId = ctx.idOf('Image', name);
  let s = await showServer(ctx, id);
  if (!s) throw new KupenstackError('vm.gone', `server ${id} disappeared before its rebuild`);
  if (imageIdOf(s) === imageId) {
    await ctx.apis.compute.post(`/servers/${id}/metadata`, { metadata: { [metaImage]: name } });
    return { done: false };
  }
  const awake = await wakeUp(ctx, s);
  if (isWaiting(awake)) return awake;
  s = awake.done;
  // Rebuild replaces the whole metadata: the record of the new image lands with the rebuild itself.
  const body: Record<string, unknown> = { imageRef: imageId, metadata: { ...s.metadata, [metaImage]: name } };
  const data = await userData(spec, ctx);
  if (data !== undefined) body.user_data = data;
  await serverAction(ctx, id, { rebuild: body });
  return { done: true };
}

/** One or two actions: paused or suspended servers only go back to ACTIVE, and only ACTIVE ones pause or suspend. */
export async function setPower(ctx: AdapterContext, current: NovaServer, want: PowerState): Promise<void | Waiting> {
  let s = current;
  for (let step = 0; step < 2; step++) {
    const action = powerAction(s.status, want);
    if (!action) return;
    await serverAction(ctx, s.id, action);
    const toActive = 'unpause' in action || 'resume' in action || 'os-start' in action;
    if (!toActive || want === 'running') return;
    const active = await waitForServer(ctx, s.id, 'the server to be ACTIVE', isSettled);
    if (isWaiting(active)) return active;
    s = active.done;
  }
}

export async function updateMetadata(ctx: AdapterContext, id: string, have: Record<string, string>, want: Record<string, string>): Promise<void> {
  const set = Object.fromEntries(Object.entries(want).filter(([k, v]) => have[k] !== v));
  // POST merges into the existing metadata, so the marker keys stay.
  if (Object.keys(set).length > 0) await ctx.apis.compute.post(`/servers/${id}/metadata`, { metadata: set });
  for (const key of Object.keys(have)) if (!(key in want)) await ctx.apis.compute.remove(`/servers/${id}/metadata/${encodeURIComponent(key)}`);
}

export async function updateVolumes(ctx: AdapterContext, id: string, have: string[], spec: VirtualMachineSpec): Promise<void> {
  const want = (spec.volumes ?? []).map((v) => ({ id: ctx.idOf('Volume', v.volumeRef.name), device: v.device }));
  // Declared order: attaching in it gives the device names the manifest expects.
  for (const v of want) {
    if (!have.includes(v.id))
      await ctx.apis.compute.post(`/servers/${id}/os-volume_attachments`, { volumeAttachment: { volumeId: v.id, ...(v.device ? { device: v.device } : {}) } });
  }
  for (const volumeId of have) if (!want.some((w) => w.id === volumeId)) await ctx.apis.compute.remove(`/servers/${id}/os-volume_attachments/${volumeId}`);
}

/** The groups of the ports Nova made from networkRef entries; Port manifests keep their own. */
export async function updatePortGroups(ctx: AdapterContext, id: string, want: string[]): Promise<void> {
  const ports = await ctx.apis.network.list<NeutronPort>('/ports', 'ports', { device_id: id });
  for (const p of ports) {
    if (isPortManifest(p) || uniqSorted(p.security_groups ?? []).join() === want.join()) continue;
    await ctx.apis.network.put(`/ports/${p.id}`, { port: { security_groups: want } });
  }
}
