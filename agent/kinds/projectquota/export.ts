import type { ExportScope, KindExport } from '../kit/export.ts';
import { quotaSections, type Section } from './adapter.ts';

/** Where each service answers a project's quotas and the cloud's defaults for it (admin scope). */
function endpoints(s: ExportScope, section: Section): { client: ExportScope['compute']; path: string; defaults: string; key: string } {
  const p = encodeURIComponent(s.projectId);
  if (section === 'compute') return { client: s.compute, path: `/os-quota-sets/${p}`, defaults: `/os-quota-sets/${p}/defaults`, key: 'quota_set' };
  if (section === 'network') return { client: s.network, path: `/quotas/${p}`, defaults: `/quotas/${p}/default`, key: 'quota' };
  return { client: s.volume, path: `/os-quota-sets/${p}`, defaults: `/os-quota-sets/${p}/defaults`, key: 'quota_set' };
}

/** Neutron's quotas of every project that has one off the defaults (`GET /quotas`), by project. */
function neutronQuotas(s: ExportScope): Promise<Map<string, Record<string, Record<string, unknown>>>> {
  return s.memo('ProjectQuota:network', async () => {
    const all = await s.network.list<Record<string, unknown> & { project_id?: string; tenant_id?: string }>('/quotas', 'quotas');
    return new Map(all.map((q) => [String(q.project_id ?? q.tenant_id), { quota: q }]));
  });
}

/**
 * The project's quotas, as one `ProjectQuota` named `quotas` holding only the
 * values that differ from the cloud's defaults (a project nobody changed
 * exports none). Nova and Cinder are read per project (they have no
 * cloud-wide list of quotas); the defaults once.
 */
export const projectQuotaExport: KindExport = {
  kind: 'ProjectQuota',
  async list(s) {
    const spec: Record<string, Record<string, unknown>> = {};
    for (const section of Object.keys(quotaSections) as Section[]) {
      const api = endpoints(s, section);
      // The defaults are the cloud's, read once per export; Neutron lists every project's non-default quotas in one call.
      const [have, defaults] = await Promise.all([
        section === 'network' && s.cloudWide
          ? neutronQuotas(s).then((all) => all.get(s.projectId) ?? {})
          : api.client.get<Record<string, Record<string, unknown>>>(api.path),
        s.memo(`ProjectQuota:defaults:${section}`, () => api.client.get<Record<string, Record<string, unknown>>>(api.defaults)),
      ]);
      for (const [name, key] of Object.entries(quotaSections[section])) {
        const value = have[api.key]?.[key];
        if (value !== undefined && value !== defaults[api.key]?.[key]) (spec[section] ??= {})[name] = value;
      }
    }
    return Object.keys(spec).length === 0 ? [] : [{ id: s.projectId, name: 'quotas', spec }];
  },
  spec: (raw) => raw.spec as Record<string, unknown>,
};
