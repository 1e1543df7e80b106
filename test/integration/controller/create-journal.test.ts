import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { applyPath } from '../../../agent/standalone/apply-path.ts';
import { defaultConfig } from '../../../agent/config/config.ts';
import { countKubeCalls } from '../../../agent/controller/call-counts.ts';
import { ConfigMapCreateJournal, createJournalName, journalKey } from '../../../agent/controller/resources/create-journal.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { Workspace, manifestHead as head } from '../../support/apply.ts';
import { testCloudName } from '../../support/context.ts';
import { OpenStackFaultProxy } from '../../testbed/faults/openstack-proxy.ts';
import { ControllerProcess, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * The controller's create journal, a ConfigMap beside its Lease, against the real API server with the
 * controller's own ServiceAccount (deploy/rbac): what a process sent and never saw answered is found by
 * whoever acts next (its restarted container, the next Lease holder), which waits for it to land and
 * adopts it instead of creating it a second time.
 */
const repo = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const lease = `cj-${run}`;
const journalName = createJournalName(lease);
let kubeconfig: string;
let core: CoreV1Api;

const journal = (): ConfigMapCreateJournal => new ConfigMapCreateJournal(core, 'kupenstack-system', journalName);
const stored = (): string => kubectlOk(['get', 'configmap', journalName, '-n', 'kupenstack-system', '-o', `jsonpath={.data.${journalKey.replace('.', '\\.')}}`]);

beforeAll(() => {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repo, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repo, 'deploy/rbac')]);
  kubeconfig = serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller');
  core = loadKubeConfig({ kubeconfig }).makeApiClient(CoreV1Api);
}, 120_000);

afterAll(() => {
  kubectl(['delete', 'configmap', journalName, '-n', 'kupenstack-system', '--ignore-not-found']);
});

describe('the ConfigMap create journal', () => {
  it('records concurrent begins in a few writes, and another process finds them with their deadlines', async () => {
    const kc = loadKubeConfig({ kubeconfig });
    const calls = countKubeCalls(kc);
    const mine = new ConfigMapCreateJournal(kc.makeApiClient(CoreV1Api), 'kupenstack-system', journalName);
    const until = Date.now() + 60_000;
    const addresses = Array.from({ length: 16 }, (_, i) => `ns-a/Network/n${i}`);
    const entries = await Promise.all(addresses.map((a) => mine.begin([a], until)));
    expect(new Set(entries).size).toBe(16);
    // Each begin resolved once its line was stored (before its create may leave): all are stored.
    // Group commit: the first begin alone (after one read), then the 15 queued behind it together.
    expect(calls.write).toBeLessThanOrEqual(3);
    const seen = await journal().landing();
    expect([...seen.keys()].sort()).toEqual([...addresses].sort());
    expect(new Set(seen.values())).toEqual(new Set([until]));

    // Ended and landed entries leave the ConfigMap; only what can still land stays.
    for (const e of entries.slice(0, 8)) await mine.end(e);
    await mine.landed(addresses.slice(8, 12));
    await mine.flushed();
    const left = await journal().landing();
    expect([...left.keys()].sort()).toEqual(addresses.slice(12).sort());
    expect(stored().trim().split('\n')).toHaveLength(4);
  });

  it('keeps both writers\' lines when two processes write at once (a conflict is read again)', async () => {
    const a = journal();
    const b = journal();
    await b.landing(); // b now holds a version that a's next write makes stale
    await a.begin(['ns-b/Network/from-a'], Date.now() + 60_000);
    await a.flushed();
    await b.begin(['ns-b/Network/from-b'], Date.now() + 60_000);
    await b.flushed();
    const seen = await journal().landing();
    expect(seen.has('ns-b/Network/from-a')).toBe(true);
    expect(seen.has('ns-b/Network/from-b')).toBe(true);
  });

  it('reads the ConfigMap once, then only after refresh() (a Lease taken over): a resync of every namespace costs no GET', async () => {
    const kc = loadKubeConfig({ kubeconfig });
    const calls = countKubeCalls(kc);
    const mine = new ConfigMapCreateJournal(kc.makeApiClient(CoreV1Api), 'kupenstack-system', journalName);
    await mine.landing();
    await mine.landing();
    expect(calls.get).toBe(1);
    // What the replica this one takes over from wrote last is seen after refresh().
    const theirs = journal();
    await theirs.begin(['ns-d/Network/theirs'], Date.now() + 60_000);
    await theirs.flushed();
    expect((await mine.landing()).has('ns-d/Network/theirs')).toBe(false);
    mine.refresh();
    expect((await mine.landing()).has('ns-d/Network/theirs')).toBe(true);
    expect(calls.get).toBe(2);
  });

  it('refuses a begin it cannot store (the create is not sent): the API server\'s refusal, naming the ConfigMap', async () => {
    // Not a valid object name: the API server refuses every write.
    const broken = new ConfigMapCreateJournal(core, 'kupenstack-system', 'Not_A_Valid_Name');
    await expect(broken.begin(['ns-e/Network/x'], Date.now() + 60_000)).rejects.toThrow('create journal ConfigMap kupenstack-system/Not_A_Valid_Name');
  });

  it('drops an entry whose deadline passed: a lost answer holds later runs back no longer than the request could have taken', async () => {
    const j = journal();
    await j.begin(['ns-c/Network/short'], Date.now() + 300);
    await j.flushed();
    expect((await journal().landing()).has('ns-c/Network/short')).toBe(true);
    await sleep(400);
    expect((await journal().landing()).has('ns-c/Network/short')).toBe(false);
  });
});

describe('the controller with a create journal', () => {
  const owner = `cj${run}`;
  const ns = `cj-${run}`;
  const prefix = `${owner}-`;
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  let controller: ControllerProcess | undefined;
  const ws = new Workspace();
  const networksIn = async (): Promise<{ id: string; name: string }[]> => {
    const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
    return p ? cloud.client('network').list('/networks', 'networks', { project_id: p.id }) : [];
  };
  const network = (name: string): string => `${head('Network', name, ns)}  mtu: 1400\n`;

  afterAll(async () => {
    kubectl(['delete', 'namespace', ns, '--wait=false']);
    if (controller?.child) await until('the project to be emptied', async () => (await networksIn()).length === 0, 120_000).catch(() => undefined);
    await controller?.stop();
    for (const n of await networksIn()) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
    for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await ws.dispose().catch(() => undefined);
  }, 300_000);

  it('waits for a create the dead process sent, and adopts it when it lands: one network, not two', { timeout: 300_000 }, async () => {
    // As a killed controller leaves it: `late` sent, not answered, landing within 60 s.
    const dead = journal();
    await dead.begin([`${ns}/Network/late`], Date.now() + 60_000);
    await dead.flushed();
    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${lease}`]);
    kubectlOk(['apply', '-f', '-'], { input: [network('first'), network('late')].join('---\n') });
    controller = new ControllerProcess(kubeconfig, ['--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '1h', '--opt-in-label', `kupenstack.io/project=${lease}`, '--no-syncs', '--leader-election-id', lease]);
    await controller.start();
    await until('the run to be held back', () => Promise.resolve(new RegExp(`held    ${ns}: waiting up to \\d+ s for 1 creates an earlier run sent`).test(controller!.log())), 90_000, 100);

    // OpenStack "finishes" it: the same owner's marker, made by another engine with its own state.
    ws.write({ [`${ns}/late.yaml`]: network('late') });
    const other = await applyPath({ path: ws.repo, cloud: testCloudName, config: { ...defaultConfig, owner, projectPrefix: prefix, stateDir: join(ws.dir, 'other-state') }, prune: false, allowMassDelete: false, log: () => undefined });
    expect(other.report?.errors).toEqual([]);
    expect(other.report?.created).toBe(1);

    // The held run's own line: the one after the hold (no run may come before it, the caches list first).
    const afterHold = (): string => controller!.log().slice(controller!.log().search(new RegExp(`held    ${ns}: `)));
    await until('the run to end', () => Promise.resolve(afterHold().includes(`reconciled ${ns} `)), 90_000);
    expect((await networksIn()).map((n) => n.name).sort(), controller.log()).toEqual(['first', 'late']);
    // It made `first` and adopted `late` as observed.
    expect(afterHold()).toMatch(new RegExp(`reconciled ${ns} .*: 1 created, `));
    // Landed and adopted: nothing is left that could hold a later run back.
    expect((await journal().landing()).has(`${ns}/Network/late`)).toBe(false);
  });
});

/**
 * A namespace, owner and Lease of its own for a controller that a test kills, its OpenStack reached through a fault
 * proxy (a clouds.yaml entry whose Keystone, and so its whole catalog, is the proxy's), and the clean-up of what it
 * may leave.
 */
function killedController(tag: string): {
  owner: string;
  ns: string;
  lease: string;
  prefix: string;
  held: { proxy?: OpenStackFaultProxy; controller?: ControllerProcess };
  networksIn: () => Promise<{ id: string; name: string }[]>;
  cloudsThrough: (proxy: OpenStackFaultProxy, name: string, extra?: Record<string, unknown>) => string;
  cleanUp: () => Promise<void>;
} {
  const owner = `${tag}${run}`;
  const ns = `${tag}-${run}`;
  const lease = `${tag}-${run}`;
  const prefix = `${owner}-`;
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const ws = new Workspace();
  const held: { proxy?: OpenStackFaultProxy; controller?: ControllerProcess } = {};
  const networksIn = async (): Promise<{ id: string; name: string }[]> => {
    const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
    return p ? cloud.client('network').list('/networks', 'networks', { project_id: p.id }) : [];
  };
  const cloudsThrough = (proxy: OpenStackFaultProxy, name: string, extra: Record<string, unknown> = {}): string => {
    const real = parse(readFileSync(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
    const entry = real.clouds[testCloudName]!;
    const file = join(ws.dir, `clouds-${name}.yaml`);
    writeFileSync(file, stringify({ clouds: { [name]: { ...entry, ...extra, auth: { ...entry.auth, auth_url: proxy.authUrl } } } }), { mode: 0o600 });
    return file;
  };
  const cleanUp = async (): Promise<void> => {
    kubectl(['delete', 'namespace', ns, '--wait=false']);
    if (held.controller?.child) await until('the project to be emptied', async () => (await networksIn()).length === 0, 120_000).catch(() => undefined);
    await held.controller?.stop();
    await held.proxy?.stop();
    for (const n of await networksIn()) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
    for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    kubectl(['delete', 'configmap', createJournalName(lease), '-n', 'kupenstack-system', '--ignore-not-found']);
    await ws.dispose().catch(() => undefined);
  };
  return { owner, ns, lease, prefix, held, networksIn, cloudsThrough, cleanUp };
}

describe('the controller killed with a bulk create held in flight (audit D2)', () => {
  const { owner, ns, lease: lease2, prefix, held: state, networksIn, cloudsThrough, cleanUp } = killedController('ck');
  const names = ['held-0', 'held-1', 'held-2'];

  afterAll(cleanUp, 300_000);

  it('kill -9 while Neutron holds the POST, then Neutron makes it: the restarted controller waits for it and adopts it, one of each', { timeout: 600_000 }, async () => {
    const proxy = (state.proxy = await new OpenStackFaultProxy({ seed: 1, rate: 0, slowMs: 1_000 }).start());
    // The first network POST (the bulk of all three) is held at the proxy: sent, not yet made.
    const held = proxy.hold('POST', /\/networks$/);
    const cloudsFile = cloudsThrough(proxy, 'held');

    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${lease2}`]);
    kubectlOk(['apply', '-f', '-'], { input: names.map((n) => `${head('Network', n, ns)}  mtu: 1400\n`).join('---\n') });
    const controller = (state.controller = new ControllerProcess(kubeconfig, ['--clouds', cloudsFile, '--cloud', 'held', '--owner', owner, '--project-prefix', prefix, '--resync', '1h', '--opt-in-label', `kupenstack.io/project=${lease2}`, '--no-syncs', '--leader-election-id', lease2]));
    await controller.start();
    const request = await Promise.race([held.arrived, sleep(180_000).then(() => undefined)]);
    expect(request, controller.log()).toBeDefined();
    controller.kill9();
    // In flight at the kill: the bulk carries all three, and Neutron has none of them yet.
    const posted = (JSON.parse(request!.body) as { networks: { name: string }[] }).networks.map((n) => n.name).sort();
    expect(posted).toEqual(names);
    expect(await networksIn()).toEqual([]);

    const from = controller.log().length;
    await controller.start();
    const after = (): string => controller.log().slice(from);
    // The new process finds the dead one's entry and waits: the request is still held, nothing is made yet.
    await until('the restarted run to wait for the held creates', () => Promise.resolve(new RegExp(`held    ${ns}: waiting up to \\d+ s for 3 creates an earlier run sent`).test(after())), 120_000, 100);
    expect(await networksIn()).toEqual([]);
    // Neutron now makes what the dead process sent.
    held.release();
    expect(await held.answered).toBe(201);

    await until('the restarted run to end', () => Promise.resolve(after().includes(`reconciled ${ns} `)), 120_000);
    expect(after()).toMatch(new RegExp(`reconciled ${ns} .*: 0 created, .* 0 errors`));
    const made = await networksIn();
    expect(made.map((n) => n.name).sort(), after()).toEqual(names);
    // Adopted: each CR points at the one network Neutron made.
    for (const n of names) {
      const id = kubectlOk(['get', 'networks.kupenstack.io', n, '-n', ns, '-o', 'jsonpath={.status.id}']);
      expect(id).toBe(made.find((m) => m.name === n)!.id);
    }
  });
});


describe('the controller killed between its early journal entry and the create (issue 33: a targeted run records while it observes)', () => {
  const { owner, ns, lease: lease3, prefix, held: state, networksIn, cloudsThrough, cleanUp } = killedController('ek');

  afterAll(cleanUp, 300_000);

  it('kill -9 after the entry is stored and before the POST: the restarted controller waits out the entry, then creates it once', { timeout: 600_000 }, async () => {
    const proxy = (state.proxy = await new OpenStackFaultProxy({ seed: 1, rate: 0, slowMs: 1_000 }).start());
    // A 10 s call timeout: the early entry's deadline is then 10 s + the 60 s margin (early-journal.ts), the wait this test sits out.
    const cloudsFile = cloudsThrough(proxy, 'early', { api_timeout: 10 });
    const args = ['--clouds', cloudsFile, '--cloud', 'early', '--owner', owner, '--project-prefix', prefix, '--resync', '1h', '--opt-in-label', `kupenstack.io/project=${lease3}`, '--no-syncs', '--leader-election-id', lease3];
    const earlyJournalOf = (): ConfigMapCreateJournal => new ConfigMapCreateJournal(core, 'kupenstack-system', createJournalName(lease3));

    kubectlOk(['create', 'namespace', ns]);
    kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${lease3}`]);
    kubectlOk(['apply', '-f', '-'], { input: `${head('Network', 'first', ns)}  mtu: 1400\n` });
    const controller = (state.controller = new ControllerProcess(kubeconfig, args));
    await controller.start();
    // The namespace's first run is a full pass; only the runs after it are targeted (and journal early).
    await until('the first full pass', () => Promise.resolve(new RegExp(`reconciled ${ns} .*: 1 created`).test(controller.log())), 180_000, 100);

    // The targeted run's observe is held at the proxy: its entry is stored meanwhile, its POST cannot have left.
    const observe = proxy.hold('GET', /\/v2\.0\/networks/);
    kubectlOk(['apply', '-f', '-'], { input: `${head('Network', 'late', ns)}  mtu: 1400\n` });
    const held = await Promise.race([observe.arrived, sleep(120_000).then(() => undefined)]);
    expect(held, controller.log()).toBeDefined();
    await until('the early entry to be stored', async () => (await earlyJournalOf().landing()).has(`${ns}/Network/late`), 60_000, 100);
    controller.kill9();
    observe.release();
    expect((await networksIn()).map((n) => n.name)).toEqual(['first']);

    const from = controller.log().length;
    await controller.start();
    const after = (): string => controller.log().slice(from);
    // The dead run's entry holds the restarted one back for its deadline: nothing of `late` exists while it waits.
    await until('the restarted run to wait out the entry', () => Promise.resolve(new RegExp(`held    ${ns}: waiting up to \\d+ s for 1 creates an earlier run sent`).test(after())), 120_000, 100);
    const waitedFor = Number(new RegExp(`waiting up to (\\d+) s`).exec(after())![1]);
    expect(waitedFor).toBeGreaterThan(0);
    expect(waitedFor).toBeLessThanOrEqual(70);
    expect((await networksIn()).map((n) => n.name)).toEqual(['first']);

    await until('the restarted run to end', () => Promise.resolve(new RegExp(`reconciled ${ns} `).test(after())), 180_000);
    expect(after()).toMatch(new RegExp(`reconciled ${ns} .*: 1 created, .* 0 errors`));
    const made = await networksIn();
    expect(made.map((n) => n.name).sort(), after()).toEqual(['first', 'late']);
    expect(kubectlOk(['get', 'networks.kupenstack.io', 'late', '-n', ns, '-o', 'jsonpath={.status.id}'])).toBe(made.find((m) => m.name === 'late')!.id);
    // Its create ended the entry: nothing is left to hold a later run back.
    expect((await earlyJournalOf().landing()).has(`${ns}/Network/late`)).toBe(false);
  });
});
