import type { KindExport } from '../kit/export.ts';
import { projectItems, tagsOf, text } from '../kit/export.ts';

const interfaceOwners = new Set(['network:router_interface', 'network:router_interface_distributed', 'network:ha_router_replicated_interface']);

/** A router: its gateway network (outside the project: by id), its interfaces by subnet, its routes. */
export const routerExport: KindExport = {
  kind: 'Router',
  list: (s) => projectItems(s, 'Router', 'project_id', (project) => s.network.list('/routers', 'routers', { project_id: project })),
  spec(raw, s) {
    const spec: Record<string, unknown> = {};
    const description = text(raw.description);
    if (description) spec.description = description;
    if (raw.admin_state_up === false) spec.adminStateUp = false;
    const gateway = raw.external_gateway_info as { network_id?: string } | null | undefined;
    // The external network is the cloud's, never the project's: a lookup by id, as a person writes it.
    if (gateway?.network_id) spec.externalGateway = { network: { id: gateway.network_id } };
    const subnets = new Set<string>();
    for (const p of s.listed('Port')) {
      if (p.device_id !== raw.id || !interfaceOwners.has(String(p.device_owner))) continue;
      for (const ip of (p.fixed_ips as { subnet_id: string }[] | undefined) ?? []) subnets.add(ip.subnet_id);
    }
    if (subnets.size > 0)
      spec.interfaces = [...subnets].map((id) => ({ subnetRef: { name: s.ref('Subnet', id) } })).sort((a, b) => (a.subnetRef.name < b.subnetRef.name ? -1 : 1));
    const routes = Array.isArray(raw.routes) ? (raw.routes as { destination: string; nexthop: string }[]) : [];
    if (routes.length > 0) spec.routes = routes.map((r) => ({ destination: r.destination, nextHop: r.nexthop }));
    const tags = tagsOf(raw);
    if (tags) spec.tags = tags;
    return spec;
  },
};
