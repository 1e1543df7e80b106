import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** The clouds.yaml entry an ApplicationCredential's Secret holds, as a client reads it. */
export interface CloudEntry {
  auth: { auth_url: string; application_credential_id: string; application_credential_secret: string };
  region_name?: string;
}

/** The entry of the Secret folder `<secretsDir>/<namespace>/<name>/` (standalone), as mounted. */
export function mountedEntry(secretsDir: string, namespace: string, name: string): CloudEntry {
  return (parse(readFileSync(join(secretsDir, namespace, name, 'clouds.yaml'), 'utf8')) as { clouds: { openstack: CloudEntry } }).clouds.openstack;
}

export interface Issued {
  status: number;
  token?: string;
  userId?: string;
  projectId?: string;
  roles?: string[];
  /** Public endpoints of the token's catalog by service type, without a trailing slash. */
  endpoints?: Record<string, string>;
}

/**
 * `openstack token issue` with an application credential: POST /v3/auth/tokens, method
 * application_credential, to `authUrl` (default the entry's own).
 */
export async function issueToken(entry: CloudEntry, opts: { scopeTo?: string; authUrl?: string } = {}): Promise<Issued> {
  const res = await fetch(`${opts.authUrl ?? entry.auth.auth_url}/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['application_credential'], application_credential: { id: entry.auth.application_credential_id, secret: entry.auth.application_credential_secret } },
        ...(opts.scopeTo ? { scope: { project: { id: opts.scopeTo } } } : {}),
      },
    }),
  });
  if (res.status !== 201) return { status: res.status };
  type Body = { token: { user: { id: string }; project: { id: string }; roles: { name: string }[]; catalog: { type: string; endpoints: { interface: string; url: string }[] }[] } };
  const body = (await res.json()) as Body;
  const endpoints: Record<string, string> = {};
  for (const c of body.token.catalog) {
    const url = c.endpoints.find((e) => e.interface === 'public')?.url;
    if (url) endpoints[c.type] = url.replace(/\/$/, '');
  }
  return { status: 201, token: res.headers.get('x-subject-token') ?? '', userId: body.token.user.id, projectId: body.token.project.id, roles: body.token.roles.map((r) => r.name).sort(), endpoints };
}
