import type { KindExport } from '../kit/export.ts';
import { projectItems, tagsOf, text } from '../kit/export.ts';

/** A network as a person writes it: the name, and only what differs from Neutron's defaults. */
export const networkExport: KindExport = {
  kind: 'Network',
  list: (s) => projectItems(s, 'Network', 'project_id', (project) => s.network.list('/networks', 'networks', { project_id: project })),
  spec(raw) {
    const spec: Record<string, unknown> = {};
    const description = text(raw.description);
    if (description) spec.description = description;
    if (raw.admin_state_up === false) spec.adminStateUp = false;
    if (raw.port_security_enabled === false) spec.portSecurityEnabled = false;
    // Admin-only settings: written so the manifest says what the object is (it validates in admin namespaces only).
    if (raw.shared === true) spec.shared = true;
    if (raw['router:external'] === true) spec.external = true;
    const tags = tagsOf(raw);
    if (tags) spec.tags = tags;
    return spec;
  },
};
