import type { RouterSpec } from '../../model/kinds.generated.ts';
import { OpenStackError } from '../../openstack/errors.ts';
import { parseDescriptionMarker } from '../../ownership/marker.ts';
import { openstackName, type AdapterContext, type KindAdapter, type Remote } from '../kit/adapter.ts';
import {
  canonicalIp,
  canonicalRoutes,
  describedUpdate,
  desiredFixedIps,
  externalNetworkId,
  findNeutron,
  getNeutron,
  lookupOne,
  neutronDescription,
  neutronRemote,
  observedFixedIps,
  observeNeutron,
  observeNeutronCloud,
  cloudPageSize,
  putTags,
  remarkNeutron,
} from '../kit/neutron.ts';
import { neutronOwnership } from '../kit/ownership.ts';

type Gateway = NonNullable<RouterSpec['externalGateway']>;
type Route = { destination: string; nexthop: string };
interface InterfacePort {
  id: string;
  device_id: string;
  description?: string;
  fixed_ips: { subnet_id: string; ip_address: string }[];
}

// Legacy, DVR and HA routers name their interface ports differently.
const interfaceOwners = ['network:router_interface', 'network:router_interface_distributed', 'network:ha_router_replicated_interface'];

/** Interface ports in one list call (device_owner repeats: Neutron ORs them). */
async function interfacePorts(ctx: AdapterContext, filter: Record<string, string>): Promise<InterfacePort[]> {
  const query = new URLSearchParams(filter);
  for (const owner of interfaceOwners) query.append('device_owner', owner);
  return ctx.apis.network.list<InterfacePort>(`/ports?${query.toString()}`, 'ports');
}

/**
 * A router's interfaces as `subnet:<id>` / `port:<id>`: a port of one of our
 * Port manifests (it carries our marker) was attached by portRef; any other
 * interface port was made by Neutron for a subnetRef.
 */
function interfacesOf(ports: readonly InterfacePort[], owner: string): string[] {
  const out = new Set<string>();
  for (const p of ports) {
    const marker = parseDescriptionMarker(p.description).marker;
    if (marker?.owner === owner && marker.ref.startsWith('Port/')) out.add(`port:${p.id}`);
    else for (const ip of p.fixed_ips) out.add(`subnet:${ip.subnet_id}`);
  }
  return [...out].sort();
}

const toRemote = (raw: Record<string, unknown>, description: string, interfaces: string[]): Remote => {
  const gateway = raw.external_gateway_info as { network_id?: string; enable_snat?: boolean; external_fixed_ips?: unknown } | null | undefined;
  return neutronRemote(raw, description, {
    admin_state_up: raw.admin_state_up,
    external_network_id: gateway?.network_id ?? null,
    enable_snat: gateway?.enable_snat ?? null,
    ...observedFixedIps('external_fixed_ip', gateway?.external_fixed_ips),
    interfaces,
    routes: canonicalRoutes((raw.routes ?? []) as Route[]),
    // Visible to admins only: a project member sees undefined.
    distributed: raw.distributed,
    ha: raw.ha,
    availability_zone_hints: [...((raw.availability_zone_hints ?? []) as string[])].sort(),
  });
};

const bare = (raw: Record<string, unknown>, description: string): Remote => toRemote(raw, description, []);

/** Fills in the routers' interfaces from one list of the project's interface ports. */
async function withInterfaces(ctx: AdapterContext, listed: Promise<Remote[]>): Promise<Remote[]> {
  const [ports, routers] = await Promise.all([interfacePorts(ctx, { project_id: ctx.projectId }), listed]);
  const byRouter = new Map<string, InterfacePort[]>();
  for (const p of ports) byRouter.set(p.device_id, [...(byRouter.get(p.device_id) ?? []), p]);
  for (const r of routers) r.fields.interfaces = interfacesOf(byRouter.get(r.id) ?? [], ctx.owner);
  return routers;
}

async function addInterface(ctx: AdapterContext, routerId: string, iface: string): Promise<void> {
  try {
    await ctx.apis.network.put(`/routers/${routerId}/add_router_interface`, interfaceBody(iface));
  } catch (err) {
    // Attached already (a stale observation): the goal is reached.
    if (!(err instanceof OpenStackError && err.status === 400 && /already has a port/i.test(err.detail))) throw err;
  }
}

/** The gateway as Neutron takes it, references resolved. */
async function gatewayInfo(ctx: AdapterContext, gw: Gateway): Promise<Record<string, unknown>> {
  const networkId = await externalNetworkId(ctx, gw);
  const info: Record<string, unknown> = { network_id: networkId };
  if (gw.enableSNAT !== undefined) info.enable_snat = gw.enableSNAT;
  if (gw.externalFixedIPs) {
    info.external_fixed_ips = await Promise.all(
      gw.externalFixedIPs.map(async (e) => {
        const ip: { subnet_id?: string; ip_address?: string } = {};
        if (e.subnetRef) ip.subnet_id = ctx.idOf('Subnet', e.subnetRef.name);
        else if (e.subnet?.id) ip.subnet_id = e.subnet.id;
        else if (e.subnet?.filter) {
          const f = e.subnet.filter;
          ip.subnet_id = String(
            (await lookupOne(ctx, 'subnets', { network_id: networkId, name: f.name, description: f.description, tags: f.tags }, 'external subnet')).id,
          );
        }
        if (e.ipAddress !== undefined) ip.ip_address = canonicalIp(e.ipAddress);
        return ip;
      }),
    );
  }
  return info;
}

const gatewayFields = ['external_network_id', 'enable_snat', 'external_fixed_ip_subnets', 'external_fixed_ip_addresses'];

function interfaceBody(iface: string): Record<string, string> {
  const [type, id] = iface.split(':') as [string, string];
  return type === 'port' ? { port_id: id } : { subnet_id: id };
}

export const router: KindAdapter = {
  kind: 'Router',
  ownership: neutronOwnership('a router'),
  service: 'network',
  fields: {
    name: 'update',
    description: 'update',
    admin_state_up: 'update',
    external_network_id: 'update',
    enable_snat: 'update',
    external_fixed_ip_subnets: 'update',
    external_fixed_ip_addresses: 'update',
    interfaces: 'update',
    routes: 'update',
    distributed: 'replace',
    ha: 'replace',
    availability_zone_hints: 'replace',
    tags: 'update',
  },

  // Two lists per project: the routers, and all their interface ports at once.
  remark: remarkNeutron('routers', 'router'),

  // Replace cascade: the interfaces on a subnet (or port) about to be replaced go first; the update after re-adds them.
  async release(ctx, remote, ids) {
    const interfaces = Array.isArray(remote.fields.interfaces) ? (remote.fields.interfaces as string[]) : [];
    for (const iface of interfaces.filter((i) => ids.includes(i.slice(i.indexOf(':') + 1)))) {
      await ctx.apis.network.put(`/routers/${remote.id}/remove_router_interface`, interfaceBody(iface), [200, 404]);
    }
  },

  observe: (ctx) => withInterfaces(ctx, observeNeutron(ctx, 'routers', bare)),

  async observeCloud(ctx) {
    const routers = await observeNeutronCloud(ctx, 'routers', bare);
    if (routers.size === 0) return routers;
    // One cloud-wide list of interface ports, kept only for the routers found.
    const byRouter = new Map<string, InterfacePort[]>();
    for (const list of routers.values()) for (const r of list) byRouter.set(r.id, []);
    const query = new URLSearchParams({ limit: String(cloudPageSize) });
    for (const owner of interfaceOwners) query.append('device_owner', owner);
    for await (const page of ctx.apis.network.pages<InterfacePort>(`/ports?${query.toString()}`, 'ports'))
      for (const p of page) byRouter.get(p.device_id)?.push(p);
    for (const list of routers.values()) for (const r of list) r.fields.interfaces = interfacesOf(byRouter.get(r.id)!, ctx.owner);
    return routers;
  },

  report: (remote) => {
    const gateway = remote.raw.external_gateway_info as { external_fixed_ips?: { ip_address?: string }[] } | null | undefined;
    return { externalGatewayIPs: (gateway?.external_fixed_ips ?? []).flatMap((ip) => (ip.ip_address ? [ip.ip_address] : [])) };
  },

  async desired(m, ctx) {
    const spec = m.spec as RouterSpec;
    const out: Record<string, unknown> = { name: openstackName(m) };
    if (spec.description !== undefined) out.description = spec.description;
    if (spec.adminStateUp !== undefined) out.admin_state_up = spec.adminStateUp;
    if (spec.externalGateway) {
      const info = await gatewayInfo(ctx, spec.externalGateway);
      out.external_network_id = info.network_id;
      if (info.enable_snat !== undefined) out.enable_snat = info.enable_snat;
      if (Array.isArray(info.external_fixed_ips))
        Object.assign(out, desiredFixedIps('external_fixed_ip', info.external_fixed_ips as { subnet_id?: string; ip_address?: string }[]));
    }
    if (spec.interfaces) {
      const ifaces = spec.interfaces.flatMap((i) =>
        i.portRef ? [`port:${ctx.idOf('Port', i.portRef.name)}`] : i.subnetRef ? [`subnet:${ctx.idOf('Subnet', i.subnetRef.name)}`] : [],
      );
      out.interfaces = [...new Set(ifaces)].sort();
    }
    if (spec.routes) out.routes = canonicalRoutes(spec.routes.map((r) => ({ destination: r.destination, nexthop: r.nextHop })));
    if (spec.distributed !== undefined) out.distributed = spec.distributed;
    if (spec.ha !== undefined) out.ha = spec.ha;
    if (spec.availabilityZoneHints) out.availability_zone_hints = [...spec.availabilityZoneHints].sort();
    if (spec.tags) out.tags = [...spec.tags].sort();
    return out;
  },

  // The gateway rides in the create call; interfaces, routes and tags are the follow-up update.
  async create(ctx, m, desired, marker) {
    const spec = m.spec as RouterSpec;
    const body: Record<string, unknown> = {
      name: desired.name,
      description: neutronDescription(desired, marker),
      admin_state_up: desired.admin_state_up ?? true,
    };
    if (spec.externalGateway) body.external_gateway_info = await gatewayInfo(ctx, spec.externalGateway);
    for (const key of ['distributed', 'ha', 'availability_zone_hints']) if (desired[key] !== undefined) body[key] = desired[key];
    const res = await ctx.apis.network.post<{ router: Record<string, unknown> }>('/routers', { router: body });
    return { ...toRemote(res.router, typeof desired.description === 'string' ? desired.description : '', []), marker };
  },

  /**
   * Interfaces are added before the routes change and removed after, since a
   * route's next hop must sit on an attached subnet. Removing a `port:`
   * interface deletes that port (Neutron's doing).
   */
  async update(ctx, remote, changes, m) {
    const spec = m.spec as RouterSpec;
    const { tags, interfaces, routes, ...rest } = changes;
    const body: Record<string, unknown> = {};
    for (const key of ['name', 'description', 'admin_state_up']) if (key in rest) body[key] = rest[key];
    if (spec.externalGateway && gatewayFields.some((k) => k in rest)) body.external_gateway_info = await gatewayInfo(ctx, spec.externalGateway);
    if (Object.keys(body).length > 0) await ctx.apis.network.put(`/routers/${remote.id}`, { router: describedUpdate(remote, body) });

    const have = new Set(Array.isArray(remote.fields.interfaces) ? (remote.fields.interfaces as string[]) : []);
    const want = new Set(Array.isArray(interfaces) ? (interfaces as string[]) : have);
    for (const iface of want) if (!have.has(iface)) await addInterface(ctx, remote.id, iface);
    if ('routes' in changes) await ctx.apis.network.put(`/routers/${remote.id}`, { router: { routes } });
    for (const iface of have)
      if (!want.has(iface)) await ctx.apis.network.put(`/routers/${remote.id}/remove_router_interface`, interfaceBody(iface), [200, 404]);

    if ('tags' in changes) await putTags(ctx, 'routers', remote.id, tags);
  },

  // Neutron refuses to delete a router with interfaces, and an interface a route still uses.
  async delete(ctx, remote) {
    const current = await ctx.apis.network.find<{ router: { routes?: unknown[] } }>(`/routers/${remote.id}`);
    if (!current) return;
    if (current.router.routes?.length) await ctx.apis.network.put(`/routers/${remote.id}`, { router: { routes: [] } });
    for (const p of await interfacePorts(ctx, { device_id: remote.id })) {
      await ctx.apis.network.put(`/routers/${remote.id}/remove_router_interface`, { port_id: p.id }, [200, 404]);
    }
    await ctx.apis.network.remove(`/routers/${remote.id}`);
  },

  async get(ctx, id) {
    const found = await getNeutron(ctx, 'routers', 'router', id, bare);
    if (found) found.fields.interfaces = interfacesOf(await interfacePorts(ctx, { device_id: id }), ctx.owner);
    return found;
  },

  find: (ctx, filter) => withInterfaces(ctx, findNeutron(ctx, 'routers', filter, bare)),
};
