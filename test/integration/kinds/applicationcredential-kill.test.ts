import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { runApply } from '../../support/apply-child.ts';
import { issueToken, mountedEntry } from '../../support/appcred.ts';
import { testCloudName } from '../../support/context.ts';
import { OpenStackFaultProxy, type Held } from '../../testbed/faults/openstack-proxy.ts';

/**
 * kill -9 of `kupenstack apply` at the two dangerous points of making an ApplicationCredential,
 * against the test bed's real Keystone: after the service user is made but before its credential,
 * and after the credential is made but before the Secret is written (its secret exists only in the
 * answer the dead process never read). The moment is placed, not hoped for: the fault proxy holds
 * the credential's POST, the child is killed while it is held, and the POST is dropped (first point)
 * or sent on to Keystone (second point). Then a plain re-run: exactly one marked service user with
 * exactly one credential, the Secret holds that one and it authenticates, the stranded user is gone.
 */

let ws: Workspace;
let secretsDir: string;
const ns = 'appcred-kill';

beforeAll(() => {
  ws = new Workspace();
  // The child's kupenstack.yaml names no secretsDir: the agent's default under its state dir, read here too.
  secretsDir = join(ws.config.stateDir, 'secrets');
  ws.secrets = new EnvFileSecretResolver({ secretsDir });
  writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir }));
});
afterAll(async () => {
  await ws.dispose();
});

interface Generation {
  userId: string;
  credentials: string[];
}

/** The service users Keystone (admin) lists for one manifest, with their credentials. */
async function generations(name: string): Promise<Generation[]> {
  const users = await ws.cloud.identity.list<{ id: string }>('/users', 'users', { name__startswith: `kupenstack.${ws.owner}.${ws.owner}-${ns}.${name}.` });
  const out: Generation[] = [];
  for (const u of users) {
    const creds = await ws.cloud.identity.list<{ id: string }>(`/users/${u.id}/application_credentials`, 'application_credentials');
    out.push({ userId: u.id, credentials: creds.map((c) => c.id) });
  }
  return out;
}

/** A clouds.yaml whose test cloud reaches Keystone (and the rest) through the proxy. */
function cloudsThrough(proxy: OpenStackFaultProxy): string {
  const real = parse(readFileSync(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
  const entry = real.clouds[testCloudName]!;
  const file = join(ws.dir, 'clouds-held.yaml');
  writeFileSync(file, stringify({ clouds: { [testCloudName]: { ...entry, auth: { ...entry.auth, auth_url: proxy.authUrl } } } }), { mode: 0o600 });
  return file;
}

/**
 * Applies the repo in a child that is killed while the credential's POST is held. Returns the held POST
 * (not yet sent) and the proxy still running: the caller drops it or sends it on, then stops the proxy.
 */
async function killWhileCredentialHeld(): Promise<{ held: Held; proxy: OpenStackFaultProxy }> {
  const proxy = await new OpenStackFaultProxy({ seed: 1, rate: 0, slowMs: 1_000 }).start();
  const held = proxy.hold('POST', /\/users\/[^/]+\/application_credentials$/);
  const run = runApply(ws, [], ws.repo, { OS_CLIENT_CONFIG_FILE: cloudsThrough(proxy) });
  const request = await Promise.race([held.arrived, run.done.then(() => undefined)]);
  run.kill();
  await run.done;
  expect(request, `no credential POST was held to kill: ${run.stderr()}`).toBeDefined();
  return { held, proxy };
}

const credential = (name: string): string => `${head('ApplicationCredential', name, ns)}  roles: [member]\n  secretRef: {name: ${name}-cloud}\n  gracePeriod: 2s\n`;

/** After the re-run: one user, one credential, the Secret holds it and Keystone takes it; the stranded user is gone. */
async function expectOneWorking(name: string, stranded: string): Promise<void> {
  const gens = await generations(name);
  expect(gens.map((g) => g.credentials.length)).toEqual([1]);
  expect(gens.map((g) => g.userId)).not.toContain(stranded);
  // Issued at the Secret's own auth_url: one pointing at the dead run's proxy would fail here.
  const entry = mountedEntry(secretsDir, ns, `${name}-cloud`);
  expect(entry.auth.application_credential_id).toBe(gens[0]!.credentials[0]);
  expect((await issueToken(entry)).status).toBe(201);
}

describe('kill -9 while an ApplicationCredential is made', () => {
  it('after the service user, before its credential: the re-run makes one credential and deletes the stranded user', { timeout: 600_000 }, async () => {
    ws.write({ [`${ns}/user-only.yaml`]: credential('user-only') });
    // The POST never reaches Keystone.
    await (await killWhileCredentialHeld()).proxy.stop();
    // The dangerous state really happened: a marked user, no credential, no Secret.
    const killed = await generations('user-only');
    expect(killed.map((g) => g.credentials.length)).toEqual([0]);
    expect(existsSync(join(secretsDir, ns, 'user-only-cloud'))).toBe(false);

    const rerun = await ws.apply();
    expect(rerun.report?.errors ?? rerun.diagnostics, ws.log.join('\n')).toEqual([]);
    await expectOneWorking('user-only', killed[0]!.userId);
  });

  it('after the credential, before the Secret: its secret is lost, so the re-run makes one new credential and deletes the stranded one at once', { timeout: 600_000 }, async () => {
    ws.write({ [`${ns}/lost-secret.yaml`]: credential('lost-secret') });
    // Keystone gets the POST after its client died, as a service goes on with a request whose client is gone.
    const { held, proxy } = await killWhileCredentialHeld();
    held.release();
    expect(await held.answered).toBe(201);
    await proxy.stop();
    // Keystone made the credential; nobody holds its secret.
    const killed = await generations('lost-secret');
    expect(killed.map((g) => g.credentials.length)).toEqual([1]);
    expect(existsSync(join(secretsDir, ns, 'lost-secret-cloud'))).toBe(false);

    const rerun = await ws.apply();
    expect(rerun.report?.errors ?? rerun.diagnostics, ws.log.join('\n')).toEqual([]);
    await expectOneWorking('lost-secret', killed[0]!.userId);
    // The first case's credential was left alone by this run.
    expect((await generations('user-only')).map((g) => g.credentials.length)).toEqual([1]);
  });

  it('prune afterwards leaves no service user of either', { timeout: 300_000 }, async () => {
    ws.remove(`${ns}/user-only.yaml`);
    ws.remove(`${ns}/lost-secret.yaml`);
    const pruned = await ws.apply({ prune: true, allowMassDelete: true });
    expect(pruned.report?.errors ?? pruned.diagnostics, ws.log.join('\n')).toEqual([]);
    expect([...(await generations('user-only')), ...(await generations('lost-secret'))]).toEqual([]);
  });
});
