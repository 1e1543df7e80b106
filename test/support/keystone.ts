import { peers } from './peers.ts';

export interface CatalogEntry {
  type: string;
  name: string;
  endpoints: { interface: string; region: string; url: string }[];
}

export interface AdminSession {
  token: string;
  catalog: CatalogEntry[];
  /** The public endpoint of a service type in the test bed's region. */
  endpoint: (type: string) => string;
}

/** A project-scoped admin token straight from Keystone, for asserting on what the cloud reports. */
export async function adminSession(): Promise<AdminSession> {
  const { user, password, project, domain } = peers.admin;
  const res = await fetch(`${peers.keystone}/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { name: user, domain: { name: domain }, password } } },
        scope: { project: { name: project, domain: { name: domain } } },
      },
    }),
  });
  if (res.status !== 201) throw new Error(`keystone answered ${res.status}: ${await res.text()}`);
  const token = res.headers.get('x-subject-token');
  if (!token) throw new Error('keystone returned no X-Subject-Token');
  const body = (await res.json()) as { token: { catalog: CatalogEntry[] } };
  const catalog = body.token.catalog;
  const endpoint = (type: string): string => {
    const url = catalog.find((c) => c.type === type)?.endpoints.find((e) => e.interface === 'public' && e.region === peers.region)?.url;
    if (!url) throw new Error(`no public ${type} endpoint in the catalog`);
    return url.replace(/\/$/, '');
  };
  return { token, catalog, endpoint };
}
