import type { KindExport } from './export.ts';
import { projectItems } from './export.ts';
import { hasOctavia } from './loadbalancer/octavia.ts';

/**
 * Octavia load balancers, as observe-only imports: the KupenStack marker of a
 * LoadBalancer is tags on the load balancer AND on each listener, pool,
 * member and monitor, and adoption writes only the load balancer's. An
 * adopted manifest with its listeners would make a second set beside the
 * existing ones (Octavia refuses the same port twice), so the export shows
 * each load balancer (VIP, status, listeners in its status) without taking it over.
 */
export const loadBalancerExport: KindExport = {
  kind: 'LoadBalancer',
  observeOnly: "a load balancer's listeners, pools and members carry no KupenStack tags, and adoption tags only the load balancer",
  async list(s) {
    const api = s.loadBalancer;
    if (!api || !(await hasOctavia(api))) return [];
    return projectItems(s, 'LoadBalancer', 'project_id', (project) => api.list('/lbaas/loadbalancers', 'loadbalancers', { project_id: project }));
  },
  spec: () => ({}),
};
