// Each side of the ORC bench logs in to OpenStack as a Keystone user of its own, made for the run: the API
// workers' access logs name the user of every request, so each side's requests (and their CPU, request-cpu.ts)
// are told apart from each other and from other users of the shared bed without either controller's help
// (ORC logs no request ids). Passwords are random, written only to 0600 clouds.yaml files and Secrets.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { testbedHome } from '../support/oci.ts';
import { loggedServices } from './request-cpu.ts';

export interface BenchUser {
  id: string;
  name: string;
  password: string;
}

const authUrl = 'http://127.0.0.1:5000/v3';

async function roleId(cloud: OpenStackCloud, name: string): Promise<string> {
  const [role] = await cloud.identity.list<{ id: string }>('/roles', 'roles', { name });
  if (!role) throw new Error(`no Keystone role ${name}`);
  return role.id;
}

/** A user of the default domain, with no role yet (grantAdmin gives one). */
export async function makeUser(cloud: OpenStackCloud, name: string): Promise<BenchUser> {
  const password = randomBytes(18).toString('base64url');
  const { user } = await cloud.identity.post<{ user: { id: string } }>('/users', { user: { name, password, domain_id: 'default' } });
  return { id: user.id, name, password };
}

/** A project of the default domain; its id. */
export async function makeProject(cloud: OpenStackCloud, name: string): Promise<string> {
  const { project } = await cloud.identity.post<{ project: { id: string } }>('/projects', { project: { name, domain_id: 'default', description: 'kupenstack bench: ORC peer' } });
  return project.id;
}

/** The admin role on a project: flavors are admin-only, and KupenStack's controller makes projects. */
export async function grantAdmin(cloud: OpenStackCloud, user: BenchUser, projectId: string): Promise<void> {
  await cloud.identity.put(`/projects/${projectId}/users/${user.id}/roles/${await roleId(cloud, 'admin')}`, undefined, [204]);
}

/** A clouds.yaml with one cloud `name`: the user scoped to `project` (a name). */
export function cloudsYaml(name: string, user: BenchUser, project: string): string {
  return [
    'clouds:',
    `  ${name}:`,
    '    auth:',
    `      auth_url: ${authUrl}`,
    `      username: ${user.name}`,
    `      password: ${user.password}`,
    `      project_name: ${project}`,
    '      user_domain_name: Default',
    '      project_domain_name: Default',
    '    region_name: RegionOne',
    '    interface: public',
    '    identity_api_version: 3',
    // As the test bed's own clouds.yaml (the CLI reads it; neither controller does).
    "    compute_api_version: '2.74'",
    '',
  ].join('\n');
}

export function writeCloudsFile(dir: string, text: string): string {
  const file = join(dir, 'clouds.yaml');
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

// `… INFO neutron.wsgi [req-A req-B USER PROJECT - - default default] 127.0.0.1 "POST /v2.0/ports HTTP/1.1" …`
const line = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3}) \d+ INFO \S+ \[\S+ (req-[0-9a-f-]{36}) ([0-9a-f]{32}) [0-9a-f]{32}[^\]]*\] \S+ "(\w+) /;

export interface UserRequests {
  ids: Set<string>;
  /** Per service and method: `neutron-server GET` → count. */
  byMethod: Map<string, number>;
}

/** One access line's answer time (epoch ms, the services log local time), request id, user id and method; undefined for other lines. */
export function userLine(text: string): { at: number; id: string; user: string; method: string } | undefined {
  const m = line.exec(text);
  if (!m) return undefined;
  return { at: new Date(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!).getTime(), id: m[8]!, user: m[9]!, method: m[10]! };
}

/** The requests of `userId` that Neutron's and Nova's API access logs show answered between `from` and `to` (epoch ms). */
export function requestsOfUser(userId: string, from: number, to: number): UserRequests {
  const out: UserRequests = { ids: new Set(), byMethod: new Map() };
  for (const service of loggedServices) {
    for (const text of readFileSync(join(testbedHome, 'openstack', 'log', `${service}.log`), 'utf8').split('\n')) {
      if (!text.includes(userId)) continue;
      const r = userLine(text);
      if (!r || r.user !== userId || r.at < from || r.at > to) continue;
      out.ids.add(r.id);
      const k = `${service} ${r.method}`;
      out.byMethod.set(k, (out.byMethod.get(k) ?? 0) + 1);
    }
  }
  return out;
}

/** `GET 412, POST 240, PUT 30`: one side's requests by method, Neutron and Nova summed. */
export function methods(byMethod: ReadonlyMap<string, number>): string {
  const sum = new Map<string, number>();
  for (const [k, n] of byMethod) {
    const m = k.split(' ')[1]!;
    sum.set(m, (sum.get(m) ?? 0) + n);
  }
  return [...sum].sort((a, b) => b[1] - a[1]).map(([m, n]) => `${m} ${n}`).join(', ');
}
