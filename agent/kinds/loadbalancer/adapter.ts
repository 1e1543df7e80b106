import { KupenstackError } from '../../errors.ts';
import type { LoadBalancerSpec } from '../../model/kinds.generated.ts';
import { markerFromTags, markerTags, ownerTag, userTags } from '../../ownership/marker.ts';
import {
  bucket,
  isKnownAfterApply,
  isPlaceholderId,
  knownAfterApply,
  openstackName,
  type AdapterContext,
  type Health,
  type KindAdapter,
  type Remote,
  type Waiting,
} from '../kit/adapter.ts';
import { canonicalIp } from '../kit/neutron.ts';
import { childTags, hasOctavia, mutable, octavia, performPatiently, readTrees, treeScope, type Raw, type TreeScope } from './octavia.ts';
import {
  adoptionSteps,
  deletionOrder,
  httpMonitor,
  nextStep,
  poolProtocol,
  shapeOf,
  sortByName,
  type ListenerShape,
  type MemberShape,
  type ObservedListener,
} from './tree.ts';
import { byProjectField } from '../kit/ownership.ts';

/**
 * Octavia load balancers. One manifest is several Octavia objects: the load
 * balancer (its VIP) and, under it, listeners, each with a default pool, the
 * pool's members and health monitor.
 * - The marker is three tags on every object, written by its create call; a
 *   child without our tags (made by hand on our load balancer) is never touched.
 * - The create makes the tagged load balancer; a kill -9 after it leaves
 *   it to the next run, which finds it by its tags and goes on.
 * - Every child is made, changed and deleted one at a time (tree.ts's
 *   nextStep), each after the load balancer left PENDING_*: Octavia takes one
 *   change per load balancer at a time. A child is found again by its tags
 *   and name, so a kill -9 after any call repeats none of them. In requeue
 *   mode a pending load balancer is returned as waiting, so no run waits for it.
 * - Prune deletes our children first (members, monitors, pools, listeners),
 *   then the load balancer, without cascade: another's listener stops it.
 * The no-op drivers of the test bed do not exercise what happens in Neutron
 * (the VIP port, member reachability) nor amphorae: see the README.
 */

/** The load balancer's children, as the tree read them with it. Kept beside the Remote, not in its raw. */
const trees = new WeakMap<Remote, ObservedListener[]>();

function toRemote(raw: Raw, tree: ObservedListener[]): Remote {
  const marker = markerFromTags(raw.tags);
  const remote: Remote = {
    id: String(raw.id),
    name: typeof raw.name === 'string' ? raw.name : '',
    ...(marker ? { marker } : {}),
    status: typeof raw.provisioning_status === 'string' ? raw.provisioning_status : '',
    raw,
    fields: {
      name: raw.name ?? '',
      description: raw.description ?? '',
      vip_subnet_id: raw.vip_subnet_id ?? null,
      vip_network_id: raw.vip_network_id ?? null,
      vip_port_id: raw.vip_port_id ?? null,
      vip_address: typeof raw.vip_address === 'string' ? canonicalIp(raw.vip_address) : null,
      listeners: shapeOf(tree),
    },
  };
  trees.set(remote, tree);
  return remote;
}

async function withTrees(scope: TreeScope, raws: Raw[]): Promise<Remote[]> {
  const refs = new Map(raws.map((r) => [String(r.id), markerFromTags(r.tags)?.ref ?? '']));
  const read = await readTrees(scope, refs);
  return raws.map((r) => toRemote(r, read.get(String(r.id)) ?? []));
}

interface VmPort {
  id: string;
  created_at?: string;
  fixed_ips?: { subnet_id: string; ip_address: string }[];
}

/** The VM's fixed address on `subnetId` (its first address when no subnet is known). */
async function vmAddress(ctx: AdapterContext, vm: string, subnetId: string | null): Promise<string> {
  const vmId = ctx.idOf('VirtualMachine', vm);
  if (isKnownAfterApply(vmId)) return knownAfterApply(`address of VirtualMachine/${vm}`);
  if (isPlaceholderId(vmId) || (subnetId !== null && isPlaceholderId(subnetId))) return `(address of ${vmId})`;
  const ports = await ctx.memo(`neutron:ports:device:${vmId}`, () => ctx.apis.network.list<VmPort>('/ports', 'ports', { device_id: vmId }));
  const ordered = [...ports].sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.id.localeCompare(b.id));
  const ips = ordered.flatMap((p) => p.fixed_ips ?? []);
  const found = subnetId === null ? ips[0] : ips.find((ip) => ip.subnet_id === subnetId);
  if (!found) {
    throw new KupenstackError(
      'loadbalancer.vm-address',
      `VirtualMachine "${vm}" has no address${subnetId ? ` on subnet ${subnetId}` : ''} yet; it gets one when Nova builds it` +
        (subnetId ? ' (or give the member a subnetRef the VM has a port on)' : ''),
    );
  }
  return canonicalIp(found.ip_address);
}

type ListenerSpec = NonNullable<LoadBalancerSpec['listeners']>[number];
type MemberSpec = NonNullable<NonNullable<ListenerSpec['pool']>['members']>[number];

/** A member's name: declared, or its VM's, or its address and port. */
export function memberName(m: MemberSpec): string {
  return m.name ?? m.vmRef?.name ?? `${(m.address ?? '').replace(/[.:]/g, '-')}-${m.port}`;
}

async function desiredListeners(ctx: AdapterContext, spec: LoadBalancerSpec): Promise<ListenerShape[]> {
  const vipSubnet = spec.vip?.subnetRef ? ctx.idOf('Subnet', spec.vip.subnetRef.name) : null;
  const out: ListenerShape[] = [];
  for (const l of spec.listeners ?? []) {
    let pool: ListenerShape['pool'] = null;
    if (l.pool) {
      const members: MemberShape[] = [];
      for (const m of l.pool.members ?? []) {
        const subnet = m.subnetRef ? ctx.idOf('Subnet', m.subnetRef.name) : vipSubnet;
        const address = m.vmRef ? await vmAddress(ctx, m.vmRef.name, subnet) : canonicalIp(m.address!);
        members.push({ name: memberName(m), address, protocol_port: m.port, weight: m.weight ?? 1, subnet_id: subnet });
      }
      const hm = l.pool.healthMonitor;
      pool = {
        protocol: poolProtocol(l.protocol),
        lb_algorithm: l.pool.lbAlgorithm ?? 'ROUND_ROBIN',
        members: sortByName(members),
        healthmonitor: hm
          ? {
              type: hm.type,
              delay: hm.delay,
              timeout: hm.timeout,
              max_retries: hm.maxRetries,
              max_retries_down: hm.maxRetriesDown ?? 3,
              ...(httpMonitor(hm.type) ? { url_path: hm.urlPath ?? '/', expected_codes: hm.expectedCodes ?? '200', http_method: hm.httpMethod ?? 'GET' } : {}),
            }
          : null,
      };
    }
    out.push({ name: l.name, protocol: l.protocol, protocol_port: l.port, connection_limit: l.connectionLimit ?? -1, pool });
  }
  return sortByName(out);
}

/** Walks the tree to what is desired, one Octavia change at a time; in requeue mode a later run goes on while the load balancer is pending. */
async function converge(ctx: AdapterContext, remote: Remote, desired: ListenerShape[]): Promise<void | Waiting> {
  const marker = remote.marker ?? { owner: ctx.owner, ref: '' };
  for (;;) {
    const lb = await mutable(ctx, remote.id);
    if ('waiting' in lb) return lb;
    const tree = (await readTrees(treeScope(ctx), new Map([[remote.id, marker.ref]]))).get(remote.id) ?? [];
    const step = nextStep(tree, desired);
    if (!step) return;
    const done = await performPatiently(ctx, remote.id, step, marker);
    if ('waiting' in done) return done;
  }
}

/** The load balancer's health: its own provisioning status, then any child of ours in ERROR or PENDING. */
export function lbHealth(remote: Remote): Health {
  const status = remote.status ?? '';
  if (status.startsWith('PENDING_')) return { state: 'progressing', reason: `Octavia provisioning status ${status}`, afterMs: 2_000 };
  if (status === 'ERROR') return { state: 'failed', reason: 'Octavia provisioning status ERROR' };
  for (const l of trees.get(remote) ?? []) {
    const objects = [
      { what: `listener ${l.shape.name}`, s: l.provisioning_status },
      ...(l.pool ? [{ what: `pool of listener ${l.shape.name}`, s: l.pool.provisioning_status }] : []),
      ...(l.pool?.healthmonitor ? [{ what: `health monitor of listener ${l.shape.name}`, s: l.pool.healthmonitor.provisioning_status }] : []),
      ...(l.pool?.members ?? []).map((m) => ({ what: `member ${m.shape.name} of listener ${l.shape.name}`, s: m.provisioning_status })),
    ];
    const bad = objects.find((o) => o.s === 'ERROR');
    if (bad) return { state: 'failed', reason: `Octavia ${bad.what} is in ERROR: the next change deletes and makes it again` };
    const pending = objects.find((o) => o.s.startsWith('PENDING_'));
    if (pending) return { state: 'progressing', reason: `Octavia ${pending.what} is ${pending.s}`, afterMs: 2_000 };
  }
  return { state: 'ready' };
}

export const loadBalancer: KindAdapter = {
  kind: 'LoadBalancer',
  ownership: byProjectField(['project_id'], "a load balancer: its project_id is the namespace's project"),
  fields: {
    name: 'update',
    description: 'update',
    vip_subnet_id: 'replace',
    vip_network_id: 'replace',
    vip_port_id: 'replace',
    vip_address: 'replace',
    listeners: 'update',
  },
  impact: {
    onDelete: { code: 'fixed-ip-changes', message: 'the VIP address is released, and with it every listener on it' },
    fields: {
      vip_subnet_id: { code: 'fixed-ip-changes', note: 'another VIP replaces the load balancer: its address changes' },
      vip_network_id: { code: 'fixed-ip-changes', note: 'another VIP replaces the load balancer: its address changes' },
      vip_port_id: { code: 'fixed-ip-changes', note: 'another VIP replaces the load balancer: its address changes' },
      vip_address: { code: 'fixed-ip-changes', note: 'another VIP replaces the load balancer: its address changes' },
      listeners: {
        note:
          'changed one at a time on the same load balancer; a listener whose protocol or port changes, and a member whose address or port changes, ' +
          'is deleted and made again (Octavia cannot change them)',
      },
    },
  },

  report(remote) {
    const tree = trees.get(remote) ?? [];
    return {
      ...(typeof remote.raw.vip_address === 'string' ? { vipAddress: remote.raw.vip_address } : {}),
      ...(typeof remote.raw.vip_port_id === 'string' ? { vipPortID: remote.raw.vip_port_id } : {}),
      ...(remote.status ? { provisioningStatus: remote.status } : {}),
      ...(typeof remote.raw.operating_status === 'string' ? { operatingStatus: remote.raw.operating_status } : {}),
      listeners: tree.map((l) => ({
        name: l.shape.name,
        id: l.id,
        port: l.shape.protocol_port,
        provisioningStatus: l.provisioning_status,
        operatingStatus: l.operating_status,
      })),
      members: tree.flatMap((l) =>
        (l.pool?.members ?? []).map((m) => ({
          listener: l.shape.name,
          name: m.shape.name,
          address: m.shape.address,
          port: m.shape.protocol_port,
          operatingStatus: m.operating_status,
        })),
      ),
    };
  },

  async observe(ctx) {
    const api = octavia(ctx);
    if (!(await hasOctavia(api))) return [];
    const raws = await api.list<Raw>('/lbaas/loadbalancers', 'loadbalancers', { project_id: ctx.projectId, tags: ownerTag(ctx.owner) });
    return withTrees(
      treeScope(ctx),
      raws.filter((r) => r.project_id === ctx.projectId && markerFromTags(r.tags)?.owner === ctx.owner),
    );
  },

  async observeCloud(ctx) {
    // One list of each Octavia collection for every project observed: the reads of a run do not grow with them.
    const out = new Map<string, Remote[]>();
    const api = ctx.cloud.client('load-balancer');
    if (!(await hasOctavia(api))) return out;
    const raws = (await api.list<Raw>('/lbaas/loadbalancers', 'loadbalancers', { tags: ownerTag(ctx.owner) })).filter(
      (r) => typeof r.project_id === 'string' && ctx.projects.has(r.project_id) && markerFromTags(r.tags)?.owner === ctx.owner,
    );
    const remotes = await withTrees({ api, owner: ctx.owner }, raws);
    remotes.forEach((remote, i) => bucket(out, raws[i]!.project_id, remote));
    return out;
  },

  async desired(m, ctx) {
    const spec = m.spec as LoadBalancerSpec;
    const out: Record<string, unknown> = { name: openstackName(m) };
    if (spec.description !== undefined) out.description = spec.description;
    if (spec.vip?.subnetRef) out.vip_subnet_id = ctx.idOf('Subnet', spec.vip.subnetRef.name);
    if (spec.vip?.networkRef) out.vip_network_id = ctx.idOf('Network', spec.vip.networkRef.name);
    if (spec.vip?.portRef) out.vip_port_id = ctx.idOf('Port', spec.vip.portRef.name);
    if (spec.vip?.address !== undefined) out.vip_address = canonicalIp(spec.vip.address);
    if (spec.listeners !== undefined) out.listeners = await desiredListeners(ctx, spec);
    return out;
  },

  /**
   * The load balancer alone, tagged, in one call; its children are the
   * follow-up update, one at a time. Not Octavia's fully populated create:
   * Zed's worker marks only the load balancer ACTIVE after it, and the
   * children stay PENDING_CREATE for good (seen on the test bed).
   */
  async create(ctx, _m, desired, marker) {
    const body: Raw = {
      name: desired.name,
      ...(desired.description !== undefined ? { description: desired.description } : {}),
      ...(desired.vip_subnet_id ? { vip_subnet_id: desired.vip_subnet_id } : {}),
      ...(desired.vip_network_id ? { vip_network_id: desired.vip_network_id } : {}),
      ...(desired.vip_port_id ? { vip_port_id: desired.vip_port_id } : {}),
      ...(desired.vip_address ? { vip_address: desired.vip_address } : {}),
      tags: markerTags(marker),
    };
    const res = await octavia(ctx).post<{ loadbalancer: Raw }>('/lbaas/loadbalancers', { loadbalancer: body });
    return { ...toRemote(res.loadbalancer, []), marker };
  },

  async update(ctx, remote, changes) {
    const body: Raw = {};
    if ('name' in changes) body.name = changes.name;
    if ('description' in changes) body.description = changes.description;
    if (Object.keys(body).length > 0) {
      const lb = await mutable(ctx, remote.id);
      if ('waiting' in lb) return lb;
      await octavia(ctx).put(`/lbaas/loadbalancers/${remote.id}`, { loadbalancer: body });
    }
    if ('listeners' in changes) return converge(ctx, remote, changes.listeners as ListenerShape[]);
  },

  /** Our children first, one at a time, then the load balancer itself; without cascade, so a child we did not make stops it. */
  async delete(ctx, remote) {
    const api = octavia(ctx);
    const ref = remote.marker?.ref ?? markerFromTags(remote.raw.tags)?.ref ?? '';
    for (;;) {
      const current = await api.find<{ loadbalancer: Raw }>(`/lbaas/loadbalancers/${remote.id}`);
      if (!current || current.loadbalancer.provisioning_status === 'PENDING_DELETE' || current.loadbalancer.provisioning_status === 'DELETED') return;
      const lb = await mutable(ctx, remote.id);
      if ('waiting' in lb) return lb;
      const tree = (await readTrees(treeScope(ctx), new Map([[remote.id, ref]]))).get(remote.id) ?? [];
      const step = deletionOrder(tree)[0];
      if (!step) break;
      const done = await performPatiently(ctx, remote.id, step, { owner: ctx.owner, ref });
      if ('waiting' in done) return done;
    }
    await api.remove(`/lbaas/loadbalancers/${remote.id}`);
  },

  async get(ctx, id) {
    const res = await octavia(ctx).find<{ loadbalancer: Raw }>(`/lbaas/loadbalancers/${encodeURIComponent(id)}`);
    if (!res || res.loadbalancer.provisioning_status === 'DELETED') return undefined;
    return (await withTrees(treeScope(ctx), [res.loadbalancer]))[0];
  },

  async find(ctx, filter) {
    const query = { project_id: ctx.projectId, name: filter.name, description: filter.description, tags: filter.tags?.join(',') };
    return withTrees(treeScope(ctx), await octavia(ctx).list<Raw>('/lbaas/loadbalancers', 'loadbalancers', query));
  },

  /**
   * Adoption's only writes: our tags beside the user's, on each child of the
   * load balancer (one at a time, Octavia's rule) and then on the load
   * balancer. Children first: a kill -9 in between leaves the load balancer
   * unadopted, and the next run's adoption tags the rest. A child carrying
   * another owner's marker is left alone. A load balancer already ours (a new
   * spec hash) is retagged alone: a child made by hand on it later stays not ours.
   */
  async remark(ctx, remote, marker) {
    if (markerFromTags(remote.raw.tags)?.ref !== marker.ref) {
      const tree = (await readTrees({ ...treeScope(ctx), everything: true }, new Map([[remote.id, '']]))).get(remote.id) ?? [];
      for (const step of adoptionSteps(tree, ctx.owner, childTags(marker))) {
        const lb = await mutable(ctx, remote.id);
        if ('waiting' in lb) return lb;
        const done = await performPatiently(ctx, remote.id, step, marker);
        if ('waiting' in done) return done;
      }
    }
    const ready = await mutable(ctx, remote.id);
    if ('waiting' in ready) return ready;
    await octavia(ctx).put(`/lbaas/loadbalancers/${remote.id}`, { loadbalancer: { tags: [...userTags(remote.raw.tags), ...markerTags(marker)] } });
  },

  health: lbHealth,
};
