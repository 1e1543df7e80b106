import type { KindExport } from '../kit/export.ts';
import { projectItems, tagsOf, text } from '../kit/export.ts';
import { isDefaultGroup } from '../securitygroup/index.ts';

/**
 * A port a person made: its network, fixed addresses by subnet, its groups.
 * Ports Neutron makes for routers, DHCP and floating IPs (`network:*`) and
 * servers' NICs (`compute:*`) are part of those objects and left out.
 */
export const portExport: KindExport = {
  kind: 'Port',
  list: (s) => projectItems(s, 'Port', 'project_id', (project) => s.network.list('/ports', 'ports', { project_id: project })),
  skip: (raw) => {
    const owner = typeof raw.device_owner === 'string' ? raw.device_owner : '';
    if (owner.startsWith('network:')) return `made by Neutron for ${owner}`;
    // A server's NIC is part of its VirtualMachine (networks: network and address), as the VM kind observes it.
    if (owner.startsWith('compute:')) return `a NIC of server ${String(raw.device_id)}: written in that VirtualMachine's networks`;
    return undefined;
  },
  spec(raw, s) {
    const spec: Record<string, unknown> = { networkRef: { name: s.ref('Network', String(raw.network_id)) } };
    const description = text(raw.description);
    if (description) spec.description = description;
    const ips = (raw.fixed_ips as { subnet_id: string; ip_address: string }[] | undefined) ?? [];
    if (ips.length > 0) spec.fixedIPs = ips.map((ip) => ({ subnetRef: { name: s.ref('Subnet', ip.subnet_id) }, ipAddress: ip.ip_address }));
    const groups = (raw.security_groups as string[] | undefined) ?? [];
    const defaults = new Set(
      s
        .listed('SecurityGroup')
        .filter(isDefaultGroup)
        .map((g) => String(g.id)),
    );
    // Only the default group is what Neutron gives a port anyway: said by leaving the list out.
    if (groups.length > 0 && !(groups.length === 1 && defaults.has(groups[0]!)))
      spec.securityGroupRefs = groups.map((id) => ({ name: s.ref('SecurityGroup', id) }));
    if (raw.port_security_enabled === false) spec.portSecurityEnabled = false;
    if (raw.admin_state_up === false) spec.adminStateUp = false;
    const pairs = (raw.allowed_address_pairs as { ip_address: string; mac_address?: string }[] | undefined) ?? [];
    if (pairs.length > 0)
      spec.allowedAddressPairs = pairs.map((p) =>
        p.mac_address && p.mac_address !== raw.mac_address ? { ipAddress: p.ip_address, macAddress: p.mac_address } : { ipAddress: p.ip_address },
      );
    if (typeof raw['binding:vnic_type'] === 'string' && raw['binding:vnic_type'] !== 'normal') spec.vnicType = raw['binding:vnic_type'];
    const tags = tagsOf(raw);
    if (tags) spec.tags = tags;
    return spec;
  },
};
