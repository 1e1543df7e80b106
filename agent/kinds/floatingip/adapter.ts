import { KupenstackError } from '../../errors.ts';
import type { FloatingIPSpec } from '../../model/kinds.generated.ts';
import { isKnownAfterApply, isPlaceholderId, knownAfterApply, type AdapterContext, type KindAdapter, type Remote } from '../kit/adapter.ts';
import {
  canonicalIp,
  describedUpdate,
  externalNetworkId,
  findNeutron,
  getNeutron,
  neutronDescription,
  observeNeutron,
  observeNeutronCloud,
  putTags,
  remarkNeutron,
  sortedTags,
} from '../kit/neutron.ts';
import { neutronOwnership } from '../kit/ownership.ts';

const toRemote = (raw: Record<string, unknown>, description: string): Remote => ({
  id: String(raw.id),
  // A floating IP has no name: its address is what people call it by.
  name: String(raw.floating_ip_address),
  status: String(raw.status),
  raw,
  fields: {
    description,
    floating_network_id: raw.floating_network_id,
    floating_ip_address: typeof raw.floating_ip_address === 'string' ? canonicalIp(raw.floating_ip_address) : null,
    port_id: raw.port_id ?? null,
    fixed_ip_address: typeof raw.fixed_ip_address === 'string' ? canonicalIp(raw.fixed_ip_address) : null,
    tags: sortedTags(raw),
  },
});

interface VmPort {
  id: string;
  created_at?: string;
  fixed_ips?: { ip_address: string }[];
}

/** The VM's port to associate: the one holding fixedIPAddress, else its first port. */
async function vmPortId(ctx: AdapterContext, vm: string, fixedIp: string | undefined): Promise<string> {
  const vmId = ctx.idOf('VirtualMachine', vm);
  if (isKnownAfterApply(vmId)) return knownAfterApply(`port of VirtualMachine/${vm}`);
  // Offline the VM exists but its port cannot be asked for: a placeholder that changes only with the VM.
  if (isPlaceholderId(vmId)) return `(port of ${vmId})`;
  const ports = await ctx.memo(`neutron:ports:device:${vmId}`, () => ctx.apis.network.list<VmPort>('/ports', 'ports', { device_id: vmId }));
  const ordered = [...ports].sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.id.localeCompare(b.id));
  const wanted = fixedIp === undefined ? undefined : canonicalIp(fixedIp);
  const found = wanted === undefined ? ordered[0] : ordered.find((p) => p.fixed_ips?.some((ip) => canonicalIp(ip.ip_address) === wanted));
  if (!found) {
    throw new KupenstackError(
      'floatingip.vm-port',
      `VirtualMachine "${vm}" has no port${wanted ? ` with address ${wanted}` : ''} yet; it gets one when Nova builds the VM${wanted ? ', or fix fixedIPAddress' : ''}`,
    );
  }
  return found.id;
}

export const floatingIp: KindAdapter = {
  impact: { onDelete: { code: 'fixed-ip-changes', message: 'the floating address is released and may go to someone else' } },
  kind: 'FloatingIP',
  ownership: neutronOwnership('a floating IP'),
  service: 'network',
  fields: {
    description: 'update',
    floating_network_id: 'replace',
    floating_ip_address: 'replace',
    port_id: 'update',
    fixed_ip_address: 'update',
    tags: 'update',
  },

  observe: (ctx) => observeNeutron(ctx, 'floatingips', toRemote),

  observeCloud: (ctx) => observeNeutronCloud(ctx, 'floatingips', toRemote),

  report: (remote) => ({
    ...(typeof remote.raw.floating_ip_address === 'string' ? { floatingIPAddress: remote.raw.floating_ip_address } : {}),
    ...(typeof remote.raw.fixed_ip_address === 'string' ? { fixedIPAddress: remote.raw.fixed_ip_address } : {}),
    ...(typeof remote.raw.port_id === 'string' ? { portID: remote.raw.port_id } : {}),
  }),

  async desired(m, ctx) {
    const spec = m.spec as FloatingIPSpec;
    const out: Record<string, unknown> = { floating_network_id: await externalNetworkId(ctx, spec.externalNetwork) };
    if (spec.description !== undefined) out.description = spec.description;
    if (spec.floatingIPAddress !== undefined) out.floating_ip_address = canonicalIp(spec.floatingIPAddress);
    // Neither portRef nor vmRef: the address is only reserved, so it is associated with nothing.
    if (spec.portRef) out.port_id = ctx.idOf('Port', spec.portRef.name);
    else if (spec.vmRef) out.port_id = await vmPortId(ctx, spec.vmRef.name, spec.fixedIPAddress);
    else out.port_id = null;
    if (spec.fixedIPAddress !== undefined) out.fixed_ip_address = canonicalIp(spec.fixedIPAddress);
    if (spec.tags) out.tags = [...spec.tags].sort();
    return out;
  },

  /**
   * Reserves the address only. Associating needs a router between the port's
   * subnet and the external network, which may come later in the run: that
   * is the follow-up update, and a failure there leaves no stray address.
   */
  async create(ctx, _m, desired, marker) {
    const body: Record<string, unknown> = { floating_network_id: desired.floating_network_id, description: neutronDescription(desired, marker) };
    if (desired.floating_ip_address !== undefined) body.floating_ip_address = desired.floating_ip_address;
    const res = await ctx.apis.network.post<{ floatingip: Record<string, unknown> }>('/floatingips', { floatingip: body });
    return { ...toRemote(res.floatingip, typeof desired.description === 'string' ? desired.description : ''), marker };
  },

  async update(ctx, remote, changes, m) {
    const body: Record<string, unknown> = {};
    if ('description' in changes) body.description = changes.description;
    if ('port_id' in changes || 'fixed_ip_address' in changes) {
      const portId = 'port_id' in changes ? changes.port_id : remote.fields.port_id;
      body.port_id = portId ?? null;
      // Which of the port's addresses, when the manifest says; Neutron picks otherwise.
      const fixed = (m.spec as FloatingIPSpec).fixedIPAddress;
      if (portId && fixed !== undefined) body.fixed_ip_address = fixed;
    }
    if (Object.keys(body).length > 0) await ctx.apis.network.put(`/floatingips/${remote.id}`, { floatingip: describedUpdate(remote, body) });
    if ('tags' in changes) await putTags(ctx, 'floatingips', remote.id, changes.tags);
  },

  async delete(ctx, remote) {
    await ctx.apis.network.remove(`/floatingips/${remote.id}`);
  },

  get: (ctx, id) => getNeutron(ctx, 'floatingips', 'floatingip', id, toRemote),

  remark: remarkNeutron('floatingips', 'floatingip'),

  // An import filter's name is the floating address.
  find: (ctx, filter) => findNeutron(ctx, 'floatingips', filter, toRemote, 'floating_ip_address'),
};
