import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { poll } from '../../../agent/util/poll.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { issueToken, mountedEntry } from '../../support/appcred.ts';
import { peers } from '../../support/peers.ts';

/**
 * Issue 32 item 4 against the test bed's real Keystone: what an app holding
 * the Secret can do with it (a token request as `openstack token issue`
 * makes it, then Neutron), rotation under a client that keeps
 * authenticating, drift, a failed Secret write, prune, and every secret
 * made kept out of logs, reports and plans.
 */

let ws: Workspace;
let secretsDir: string;
const a = 'appcred-a';
const b = 'appcred-b';
/** Every secret value the Secret folder ever held, for the grep at the end of each step. */
const secretsSeen = new Set<string>();

beforeAll(() => {
  ws = new Workspace();
  secretsDir = join(ws.dir, 'secrets');
  ws.secrets = new EnvFileSecretResolver({ secretsDir });
});
afterAll(async () => {
  await ws.dispose();
});

interface CloudEntry {
  auth: { auth_url: string; application_credential_id: string; application_credential_secret: string };
  region_name?: string;
}

/** What a client reads: the clouds.yaml of the Secret, as mounted. */
function mounted(): CloudEntry {
  const entry = (parse(readFileSync(join(secretsDir, a, 'app-cloud', 'clouds.yaml'), 'utf8')) as { clouds: { openstack: CloudEntry } }).clouds.openstack;
  secretsSeen.add(entry.auth.application_credential_secret);
  return entry;
}

interface Issued {
  status: number;
  token?: string;
  projectId?: string;
  roles?: string[];
  networkUrl?: string;
}

/** `openstack token issue` with an application credential: POST /v3/auth/tokens, method application_credential. */
async function issue(entry: CloudEntry, scopeTo?: string): Promise<Issued> {
  const res = await fetch(`${entry.auth.auth_url}/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['application_credential'], application_credential: { id: entry.auth.application_credential_id, secret: entry.auth.application_credential_secret } },
        ...(scopeTo ? { scope: { project: { id: scopeTo } } } : {}),
      },
    }),
  });
  if (res.status !== 201) return { status: res.status };
  const body = (await res.json()) as { token: { project: { id: string }; roles: { name: string }[]; catalog: { type: string; endpoints: { interface: string; url: string }[] }[] } };
  const network = body.token.catalog.find((c) => c.type === 'network')?.endpoints.find((e) => e.interface === 'public')?.url;
  return { status: 201, token: res.headers.get('x-subject-token') ?? '', projectId: body.token.project.id, roles: body.token.roles.map((r) => r.name).sort(), ...(network ? { networkUrl: network.replace(/\/$/, '') } : {}) };
}

async function projectId(ns: string): Promise<string> {
  const [p] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${ns}` });
  return p!.id;
}

/** The service users KupenStack made for namespace A, and their credentials, as Keystone (admin) lists them. */
async function inKeystone(): Promise<{ userId: string; credentials: string[] }[]> {
  const users = await ws.cloud.identity.list<{ id: string; default_project_id?: string }>('/users', 'users', { name__startswith: `kupenstack.${ws.owner}.${ws.owner}-${a}.` });
  const out = [];
  for (const u of users) {
    const creds = await ws.cloud.identity.list<{ id: string }>(`/users/${u.id}/application_credentials`, 'application_credentials');
    out.push({ userId: u.id, credentials: creds.map((c) => c.id) });
  }
  return out;
}

/** Every file of the agent's state dir: the status it keeps for each resource (standalone's status). */
function stateFiles(): string {
  return readdirSync(ws.config.stateDir, { recursive: true, encoding: 'utf8' })
    .map((f) => join(ws.config.stateDir, f))
    .filter((f) => statSync(f).isFile())
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
}

/** No secret the Secret ever held is in the agent's log, its status (state dir), a report or a plan (the grep test). */
function expectNoSecretIn(outputs: unknown[], statusHeld = true): void {
  const status = stateFiles();
  // The status is really there to be searched (gone after prune).
  expect(/"secretName":\s*"app-cloud"/.test(status)).toBe(statusHeld);
  const text = [ws.log.join('\n'), status, ...outputs.map((o) => JSON.stringify(o))].join('\n');
  expect(secretsSeen.size).toBeGreaterThan(0);
  for (const s of secretsSeen) expect(text.includes(s), 'a credential secret reached a log, report or plan').toBe(false);
}

const credential = (extra = ''): string => `${head('ApplicationCredential', 'app', a)}  roles: [member]\n  secretRef: {name: app-cloud}\n  gracePeriod: 2s\n${extra}`;
const networks = `${head('Network', 'a-net', a)}  mtu: 1400\n---\n${head('Network', 'b-net', b)}  mtu: 1400\n`;

describe('ApplicationCredential', () => {
  it("authenticates to Keystone scoped to its namespace's project only, cannot see another namespace's networks; a role the cloud lacks is refused by name", async () => {
    ws.write({ 'nets.yaml': networks, 'cred.yaml': credential() });
    const applied = await ws.apply();
    expect(applied.diagnostics).toEqual([]);
    expect(applied.report!.errors, ws.log.join('\n')).toEqual([]);

    const entry = mounted();
    const [projectA, projectB] = [await projectId(a), await projectId(b)];
    const token = await issue(entry);
    expect(token).toMatchObject({ status: 201, projectId: projectA });
    expect(token.roles).toContain('member');
    expect(token.roles).not.toContain('admin');
    // An application credential cannot ask for another scope: Keystone refuses it.
    expect((await issue(entry, projectB)).status).toBe(401);

    const res = await fetch(`${token.networkUrl}/v2.0/networks`, { headers: { 'x-auth-token': token.token! } });
    const names = ((await res.json()) as { networks: { name: string; project_id: string }[] }).networks;
    expect(names.map((n) => n.name)).toContain('a-net');
    expect(names.filter((n) => n.project_id === projectB)).toEqual([]);

    expect(await inKeystone()).toEqual([{ userId: expect.any(String) as string, credentials: [entry.auth.application_credential_id] }]);

    // A role the cloud does not have: known only by asking Keystone, so the error names the role, the cloud's roles and the fix; nothing is made.
    ws.write({ 'bad.yaml': `${head('ApplicationCredential', 'bad', a)}  roles: [no-such-role]\n  secretRef: {name: bad-cloud}\n` });
    const bad = await ws.apply();
    expect(bad.report!.errors.map((e) => `${e.address}: ${e.message}`).join('\n')).toMatch(/ApplicationCredential\/bad: .*no role "no-such-role" \(it has: .*member.*\); name one of those/);
    expect((await inKeystone()).length).toBe(1);
    ws.remove('bad.yaml');
    const again = await ws.apply();
    expect(again.report).toMatchObject({ created: 0, updated: 0, errors: [] });
    expectNoSecretIn([applied, again, await ws.plan()]);
  });

  it('rotation keeps a working credential throughout; after the grace the old one is gone', async () => {
    const before = mounted();
    let failures = 0;
    const ids = new Set<string>();
    let applied = false;
    let lookedAfter = 0;
    const client = (async () => {
      // A client that authenticates with whatever the Secret holds, over and over, until it has used the new credential.
      for (;;) {
        const entry = mounted();
        ids.add(entry.auth.application_credential_id);
        if ((await issue(entry)).status !== 201) failures++;
        if (applied && (entry.auth.application_credential_id !== before.auth.application_credential_id || ++lookedAfter > 20)) return;
      }
    })();
    ws.write({ 'cred.yaml': credential().replace('  name: app\n', "  name: app\n  annotations: {kupenstack.io/rotate: '1'}\n") });
    const rotated = await ws.apply();
    applied = true;
    await client;
    const after = mounted();
    expect(rotated.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(failures).toBe(0);
    expect(after.auth.application_credential_id).not.toBe(before.auth.application_credential_id);
    expect([...ids].sort()).toEqual([before.auth.application_credential_id, after.auth.application_credential_id].sort());
    // The old one still works during the grace.
    expect((await issue(before)).status).toBe(201);

    // The first run after the grace deletes it (each run looks once; none waits for the grace).
    await poll(async () => ((await ws.apply()).report?.updated === 1 ? true : undefined), { timeoutMs: 60_000, initialDelayMs: 500, maxDelayMs: 1_000, onTimeout: () => new Error('the old credential was never deleted') });
    // Keystone no longer knows it (404 for an unknown application credential).
    expect([401, 404]).toContain((await issue(before)).status);
    expect((await issue(after)).status).toBe(201);
    expect((await inKeystone()).flatMap((u) => u.credentials)).toEqual([after.auth.application_credential_id]);
    expectNoSecretIn([rotated]);
  });

  it('a credential deleted in Keystone is made again; one whose Secret write failed is replaced by exactly one new one, and the one clients hold keeps its grace', async () => {
    const [gen] = await inKeystone();
    await ws.cloud.identity.remove(`/users/${gen!.userId}/application_credentials/${gen!.credentials[0]!}`);
    const healed = await ws.apply();
    expect(healed.report!.errors, ws.log.join('\n')).toEqual([]);
    expect((await issue(mounted())).status).toBe(201);

    // The Secret cannot be written (its ..data link is a folder: the swap's rename fails, even as root): the credential is
    // made in Keystone, then its secret is lost, as after a kill -9 between the two.
    const folder = join(secretsDir, a, 'app-cloud');
    const version = readlinkSync(join(folder, '..data'));
    rmSync(join(folder, '..data'));
    renameSync(join(folder, version), join(folder, '..data'));
    ws.write({ 'cred.yaml': credential().replace('  name: app\n', "  name: app\n  annotations: {kupenstack.io/rotate: '2'}\n") });
    const failed = await ws.apply();
    renameSync(join(folder, '..data'), join(folder, version));
    symlinkSync(version, join(folder, '..data'));
    expect(failed.report!.errors.map((e) => e.message).join('\n')).toContain('cannot write the Secret folder');
    const held = mounted().auth.application_credential_id;
    const stranded = (await inKeystone()).filter((u) => !u.credentials.includes(held));
    expect(stranded.map((u) => u.credentials.length)).toEqual([1]);
    const adopted = await ws.apply();
    expect(adopted.report!.errors, ws.log.join('\n')).toEqual([]);
    const now = mounted().auth.application_credential_id;
    // Exactly one new credential; the stranded one (nobody can hold its secret) is gone at once; the one clients hold keeps its grace.
    expect((await inKeystone()).flatMap((u) => u.credentials).sort()).toEqual([held, now].sort());
    expect((await issue(mounted())).status).toBe(201);
    expectNoSecretIn([healed, failed, adopted]);
  });

  it('accessRules: Keystone keeps exactly those, a call outside them is refused; unrestricted mints credentials, a restricted one cannot; a changed secretRef deletes the old Secret KupenStack made, never one the operator opted in', async () => {
    const r = 'appcred-r';
    const ruledAt = (name: string): CloudEntry => {
      const e = mountedEntry(secretsDir, r, name);
      secretsSeen.add(e.auth.application_credential_secret);
      return e;
    };
    const servers = '    - {service: compute, method: GET, path: /v2.1/servers}\n';
    const projects = '    - {service: identity, method: GET, path: /v3/auth/projects}\n';
    const ruled = (rules: string, secret = 'ruled-cloud'): string => `${head('ApplicationCredential', 'ruled', r)}  roles: [member]\n  secretRef: {name: ${secret}}\n  gracePeriod: 2s\n  accessRules:\n${rules}`;
    const minter = (secret: string): string => `${head('ApplicationCredential', 'minter', r)}  roles: [member]\n  secretRef: {name: ${secret}}\n  gracePeriod: 2s\n  unrestricted: true\n`;
    // The operator's own folder, opted in: written into, never deleted.
    const theirs = join(secretsDir, r, 'theirs');
    mkdirSync(theirs, { recursive: true });
    writeFileSync(join(theirs, 'note'), 'kept');
    writeFileSync(join(theirs, '.kupenstack-accept-credentials'), '');
    ws.write({ 'ruled.yaml': ruled(servers + projects), 'minter.yaml': minter('theirs') });
    const applied = await ws.apply();
    expect(applied.report!.errors, ws.log.join('\n')).toEqual([]);

    // Keystone (admin) reports exactly the declared rules on the credential.
    const userOf = async (name: string): Promise<string> => {
      const users = await ws.cloud.identity.list<{ id: string }>('/users', 'users', { name__startswith: `kupenstack.${ws.owner}.${ws.owner}-${r}.${name}.` });
      expect(users).toHaveLength(1);
      return users[0]!.id;
    };
    type Cred = { access_rules?: { service: string; method: string; path: string }[]; unrestricted?: boolean };
    const keystoneView = async (name: string, id: string): Promise<Cred> =>
      (await ws.cloud.identity.get<{ application_credential: Cred }>(`/users/${await userOf(name)}/application_credentials/${id}`)).application_credential;
    const first = ruledAt('ruled-cloud');
    const rulesOf = (c: Cred): string[] => (c.access_rules ?? []).map((x) => `${x.service} ${x.method} ${x.path}`).sort();
    expect(rulesOf(await keystoneView('ruled', first.auth.application_credential_id))).toEqual(['compute GET /v2.1/servers', 'identity GET /v3/auth/projects']);

    // Its token is issued; Neutron refuses it a call outside its rules, the same call the unruled credential of namespace A makes.
    const token = await issueToken(first);
    expect(token.status).toBe(201);
    const networks = (t: { token?: string; endpoints?: Record<string, string> }): Promise<number> =>
      fetch(`${t.endpoints!.network!}/v2.0/networks`, { headers: { 'x-auth-token': t.token! } }).then(async (res) => (await res.body?.cancel(), res.status));
    expect(await networks(token)).toBe(401);
    expect(await networks(await issueToken(mounted()))).toBe(200);

    // Unrestricted: its holder may make another credential (Keystone's own check); a restricted one is refused.
    const mint = async (t: { token?: string; userId?: string }): Promise<string> => {
      const res = await fetch(`${peers.keystone}/users/${t.userId!}/application_credentials`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-auth-token': t.token! },
        // The role named: the token also carries reader (implied by member), which Keystone refuses to delegate as not assigned.
        body: JSON.stringify({ application_credential: { name: `minted-${ws.owner}`, roles: [{ name: 'member' }] } }),
      });
      const body = (await res.json()) as { application_credential?: { secret?: string }; error?: { message?: string } };
      if (body.application_credential?.secret) secretsSeen.add(body.application_credential.secret);
      return `${res.status}${body.error?.message ? ` ${body.error.message}` : ''}`;
    };
    const minterEntry = ruledAt('theirs');
    expect((await keystoneView('minter', minterEntry.auth.application_credential_id)).unrestricted).toBe(true);
    expect(await mint(await issueToken(minterEntry))).toBe('201');
    // A 201 here was Keystone run with 16 threads per process: its AuthContextMiddleware shares the validated token between
    // them (self.token), so the check could read another request's password token; the test bed runs it single-threaded.
    // On a mismatch the message still says what Keystone holds for that credential.
    const restricted = mounted();
    const restrictedToken = await issueToken(restricted);
    const minted = await mint(restrictedToken);
    const held = minted.startsWith('403') ? undefined : await ws.cloud.identity.get<{ application_credential: Cred & { id: string; name: string } }>(`/users/${restrictedToken.userId!}/application_credentials/${restricted.auth.application_credential_id}`).then((x) => x.application_credential, (e: unknown) => String(e));
    expect(minted, `the restricted credential ${restricted.auth.application_credential_id} (user ${restrictedToken.userId}) minted one; Keystone (admin) holds: ${JSON.stringify(held)}`).toMatch(/^403/);

    // A change of the rules is planned as a rotation and made: the new credential carries the new rules.
    ws.write({ 'ruled.yaml': ruled(servers) });
    const planned = await ws.plan();
    expect(JSON.stringify(planned)).toMatch(/accessRules/);
    const rotated = await ws.apply();
    expect(rotated.report!.errors, ws.log.join('\n')).toEqual([]);
    const second = ruledAt('ruled-cloud');
    expect(second.auth.application_credential_id).not.toBe(first.auth.application_credential_id);
    const users = await ws.cloud.identity.list<{ id: string }>('/users', 'users', { name__startswith: `kupenstack.${ws.owner}.${ws.owner}-${r}.ruled.` });
    const all = await Promise.all(users.map((u) => ws.cloud.identity.list<Cred & { id: string }>(`/users/${u.id}/application_credentials`, 'application_credentials')));
    expect(rulesOf(all.flat().find((c) => c.id === second.auth.application_credential_id)!)).toEqual(['compute GET /v2.1/servers']);

    // secretRef changed: the new Secret holds the credential and works; the old folder KupenStack made is gone; the operator's stays.
    ws.write({ 'ruled.yaml': ruled(servers, 'ruled-cloud-2'), 'minter.yaml': minter('minter-cloud') });
    const moved = await ws.apply();
    expect(moved.report!.errors, ws.log.join('\n')).toEqual([]);
    expect((await issueToken(ruledAt('ruled-cloud-2'))).status).toBe(201);
    expect((await issueToken(ruledAt('minter-cloud'))).status).toBe(201);
    expect(existsSync(join(secretsDir, r, 'ruled-cloud'))).toBe(false);
    expect(readFileSync(join(theirs, 'note'), 'utf8')).toBe('kept');
    expect(existsSync(join(theirs, 'application_credential_id'))).toBe(true);
    // Once the old ones' grace is over they go, and then nothing is left to do (the Secret names stay put: no rotation loop).
    const again = await poll(async () => {
      const o = await ws.apply();
      return o.report?.errors.length === 0 && o.report.created === 0 && o.report.updated === 0 ? o : undefined;
    }, { timeoutMs: 60_000, initialDelayMs: 500, maxDelayMs: 1_000, onTimeout: () => new Error(`never converged:\n${ws.log.join('\n')}`) });
    for (const name of ['ruled', 'minter']) expect(await ws.cloud.identity.list('/users', 'users', { name__startswith: `kupenstack.${ws.owner}.${ws.owner}-${r}.${name}.` })).toHaveLength(1);

    ws.remove('ruled.yaml');
    ws.remove('minter.yaml');
    const pruned = await ws.apply({ prune: true, allowMassDelete: true });
    expect(pruned.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(await ws.cloud.identity.list('/users', 'users', { name__startswith: `kupenstack.${ws.owner}.${ws.owner}-${r}.` })).toEqual([]);
    expect(existsSync(join(secretsDir, r, 'ruled-cloud-2'))).toBe(false);
    expect(existsSync(theirs)).toBe(true);
    expectNoSecretIn([applied, planned, rotated, moved, again, pruned]);
  });

  it('prune deletes the credentials, their users and the Secret KupenStack made', async () => {
    ws.remove('cred.yaml');
    const pruned = await ws.apply({ prune: true, allowMassDelete: true });
    expect(pruned.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(await inKeystone()).toEqual([]);
    expect(() => readFileSync(join(secretsDir, a, 'app-cloud', 'clouds.yaml'))).toThrow(/ENOENT/);
    expectNoSecretIn([pruned], false);
  });
});
