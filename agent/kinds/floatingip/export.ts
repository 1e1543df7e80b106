import type { KindExport } from '../kit/export.ts';
import { projectItems, tagsOf, text } from '../kit/export.ts';

/**
 * A floating IP: its address (kept: it is what people know it by), the
 * external network by id (the cloud's, never the project's), and what it is
 * associated with — a Port manifest, or a server's NIC (`vmRef` and the NIC's
 * address), since the ports Nova made are part of their VM.
 */
export const floatingIpExport: KindExport = {
  kind: 'FloatingIP',
  list: (s) => projectItems(s, 'FloatingIP', 'project_id', (project) => s.network.list('/floatingips', 'floatingips', { project_id: project })),
  spec(raw, s) {
    const spec: Record<string, unknown> = { externalNetwork: { network: { id: raw.floating_network_id } }, floatingIPAddress: raw.floating_ip_address };
    const description = text(raw.description);
    if (description) spec.description = description;
    const port = typeof raw.port_id === 'string' ? s.listed('Port').find((p) => p.id === raw.port_id) : undefined;
    if (port && String(port.device_owner).startsWith('compute:')) {
      spec.vmRef = { name: s.ref('VirtualMachine', String(port.device_id)) };
      if (typeof raw.fixed_ip_address === 'string') spec.fixedIPAddress = raw.fixed_ip_address;
    } else if (port) {
      spec.portRef = { name: s.ref('Port', String(port.id)) };
      if (typeof raw.fixed_ip_address === 'string' && ((port.fixed_ips as unknown[] | undefined)?.length ?? 0) > 1) spec.fixedIPAddress = raw.fixed_ip_address;
    }
    const tags = tagsOf(raw);
    if (tags) spec.tags = tags;
    return spec;
  },
};
