import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../../agent/act/projects.ts';
import { propDigest } from '../../../agent/glance/version-rules.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import type { SyncStatus } from '../../../agent/sync/status.ts';
import { AgentProcess, freePort, head, TestRepo } from '../../support/agent-harness.ts';
import { testCloudName } from '../../support/context.ts';
import { startNotifyingRegistry, type NotifyingRegistry } from '../../support/notifying-registry.ts';
import { peers } from '../../support/peers.ts';
import { pushDiskAs, qcow2Disk, target } from '../kinds/image-oci-fixtures.ts';

/**
 * A user moves a tag in a registry that notifies the agent (distribution
 * 2.8's notifications.endpoints, test/testbed/registry/notifying.sh): the
 * Image following it gets the new digest in Glance at once, though its
 * interval and its Sync's are 1 h and 30 min. An event for a repository no
 * Image follows makes the agent send no request to the registry (its access
 * log says so), and a re-resolution of a tag that did not move reads no blob.
 * The Sync has prune: false, so it observes only the kinds it declares: a
 * run is the Image's work, not a scan of every kind on a loaded test bed.
 */

const sync = 'rhooks';
const ns = 'rhooks';
const repo = `registry-hooks/os-${randomBytes(3).toString('hex')}`;
const unrelated = `registry-hooks/other-${randomBytes(3).toString('hex')}`;
/** Followed by a second Image with no interval: every full pass asks the registry about it, a notification's pass must not. */
const bystander = `registry-hooks/bystander-${randomBytes(3).toString('hex')}`;
let agent: AgentProcess;
let gitRepo: TestRepo;
let registry: NotifyingRegistry;
let secret = '';
let d1 = '';

interface GlanceImage {
  id: string;
  name: string;
  status: string;
  os_hidden?: boolean;
  [k: string]: unknown;
}

/** The version that holds the Image's name in Glance (what a user boots), as Glance reports it. */
async function current(): Promise<GlanceImage | undefined> {
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const project = (await ownedProjects(cloud, `${agent.owner}-${sync}`)).find((p) => p.namespace === ns);
  if (!project) return undefined;
  const apis = await cloud.forProject(project.id);
  const images = await apis.image.list<GlanceImage>('/images', 'images', { owner: project.id, name: 'os' });
  return images.find((i) => i.status === 'active' && !i.os_hidden);
}

async function waitForDigest(digest: string, timeoutMs: number): Promise<number> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if ((await current())?.[propDigest] === digest) return Date.now();
    await sleep(100);
  }
  throw new Error(`Glance's "os" never showed ${digest}; it shows ${String((await current())?.[propDigest])}\n${agent.tail()}`);
}

/** Requests the agent sent to the registry (its User-Agent), in the access log from `from` on. */
function agentRequests(from: number): string[] {
  return registry
    .log()
    .slice(from)
    .split('\n')
    .filter((l) => l.includes('"kupenstack/'));
}

beforeAll(async () => {
  agent = new AgentProcess();
  agent.port = await freePort();
  secret = randomUUID();
  const secretFile = join(agent.dir, 'secret');
  writeFileSync(secretFile, secret);
  registry = await startNotifyingRegistry(`http://127.0.0.1:${agent.port}/hooks/registry`, secret);
  target.registry = registry.host;
  d1 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
  await pushDiskAs('kupenstack-artifact', bystander, 'stable', qcow2Disk());
  gitRepo = new TestRepo('registry-hooks');
  gitRepo.write({
    [`${ns}/os.yaml`]: `${head('Image', 'os', ns)}  interval: 1h\n  source:\n    oci: {repository: "${registry.host}/${repo}", tag: stable, insecure: true, sharing: private}\n`,
    [`${ns}/bystander.yaml`]: `${head('Image', 'bystander', ns)}  source:\n    oci: {repository: "${registry.host}/${bystander}", tag: stable, insecure: true, sharing: private}\n`,
  });
  const sha = gitRepo.commit('an image following a tag');
  gitRepo.push();
  agent.configure([{ name: sync, source: { git: { url: gitRepo.url, ref: { branch: 'main' }, username: peers.git.user, passwordEnv: 'KS_RH_GIT_PASSWORD' } }, interval: '30m', retryInterval: '5s', webhook: { secretFile }, prune: false }]);
  await agent.start({ KS_RH_GIT_PASSWORD: peers.git.password });
  await agent.waitFor(sync, 'first revision', (s: SyncStatus) => s.lastAppliedRevision?.endsWith(sha) === true, 240_000);
}, 300_000);

afterAll(async () => {
  target.registry = '127.0.0.1:5050';
  await agent?.dispose([sync]);
  gitRepo?.dispose();
  await registry?.stop();
}, 180_000);

describe('registry notifications', () => {
  it('a tag moved in the registry reaches Glance at once, whatever the interval', async () => {
    await waitForDigest(d1, 30_000);
    const from = registry.log().length;
    const partial = agent.nextLine('the pass limited to the Image', (l) => l.msg === 'applying only what the event names', 60_000);
    const moved = agent.nextLine('registry notification for the move', (l) => l.msg === 'registry notification: tag moved, resolving now', 60_000);
    const disk = qcow2Disk();
    const pushedAt = Date.now();
    const d2 = await pushDiskAs('kupenstack-artifact', repo, 'stable', disk);
    expect(d2).not.toBe(d1);
    const line = await moved;
    expect(line.syncs).toEqual([sync]);
    const activeAt = await waitForDigest(d2, 200_000);
    console.log(`tag move → new active Glance version: ${activeAt - pushedAt} ms (registry notification)`);
    const timeline = agent.lines.filter((l) => Date.parse(l.time) >= pushedAt && Date.parse(l.time) <= activeAt).slice(0, 40);
    console.log(timeline.map((l) => `+${Date.parse(l.time) - pushedAt} ms ${l.msg}${typeof l.durationMs === 'number' ? ` (${l.durationMs} ms)` : ''}`).join('\n'));
    // The run that did it was started by the notification (history is newest first). It is recorded when it ends,
    // after the old version is hidden and retention ran, a moment after Glance shows the new one.
    await agent.waitFor(sync, 'the run the notification started to be recorded', (s: SyncStatus) => s.history.some((r) => Date.parse(r.startedAt) >= pushedAt), 60_000);
    const run = (await agent.status(sync)).history.find((r) => Date.parse(r.startedAt) >= pushedAt);
    expect(run?.trigger).toBe('registry');
    // Exactly the Image that follows the tag: no Git fetch, no other Image asked about (the registry's access log).
    expect((await partial).only).toEqual([`${ns}/Image/os`]);
    const requests = agentRequests(from);
    expect(requests.some((l) => l.includes(`/v2/${repo}/manifests/stable`))).toBe(true);
    expect(requests.filter((l) => l.includes(`/v2/${bystander}/`))).toEqual([]);
  }, 300_000);

  it('an event for a repository no Image follows makes no registry request', async () => {
    const from = registry.log().length;
    const ignored = agent.nextLine('the unrelated event', (l) => l.msg === 'registry notification ignored' && JSON.stringify(l.pushes ?? []).includes(unrelated), 60_000);
    await pushDiskAs('kupenstack-artifact', unrelated, 'stable', qcow2Disk());
    await ignored;
    // Give a wrongly triggered run time to reach the registry before looking.
    await sleep(3000);
    const log = registry.log().slice(from);
    expect(log).toContain(`PUT /v2/${unrelated}/manifests/stable`);
    expect(agentRequests(from)).toEqual([]);
  }, 120_000);

  it('a tag that did not move is resolved again without reading any blob', async () => {
    const before = await current();
    expect(before?.[propDigest]).toMatch(/^sha256:/);
    const from = registry.log().length;
    // The same tag again (as a registry re-sends it, with a new event id): a resolution, no transfer.
    const body = JSON.stringify({ events: [{ id: randomUUID(), timestamp: new Date().toISOString(), action: 'push', target: { mediaType: 'application/vnd.oci.image.manifest.v1+json', repository: repo, tag: 'stable', digest: before![propDigest] }, request: { host: registry.host } }] });
    const done = agent.nextLine('the run the event started', (l) => l.msg === 'applied' && l.trigger === 'registry', 250_000);
    const res = await fetch(`${agent.base}/hooks/registry`, { method: 'POST', headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', authorization: `Bearer ${secret}` }, body });
    expect(res.status).toBe(202);
    await done;
    const requests = agentRequests(from);
    expect(requests.some((l) => l.includes(`/v2/${repo}/manifests/stable`))).toBe(true);
    expect(requests.filter((l) => l.includes('/blobs/'))).toEqual([]);
    expect((await current())?.id).toBe(before!.id);
  }, 300_000);

  it('a wrong secret is refused and a replayed delivery ignored', async () => {
    const body = JSON.stringify({ events: [{ id: randomUUID(), timestamp: new Date().toISOString(), action: 'push', target: { repository: repo, tag: 'stable' }, request: { host: registry.host } }] });
    const post = (auth: string): Promise<Response> => fetch(`${agent.base}/hooks/registry`, { method: 'POST', headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', authorization: auth }, body });
    const bad = await post('Bearer not-the-secret');
    expect(bad.status).toBe(401);
    expect(await bad.text()).not.toContain(secret);
    expect((await post(`Bearer ${secret}`)).status).toBe(202);
    const again = await post(`Bearer ${secret}`);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { result: string }).result).toBe('replayed');
  }, 60_000);

  it('a revision the agent rejected is never what a registry pass applies', async () => {
    // The newest revision gives the Image a property, but a broken manifest beside it gets it rejected whole.
    const good = (await agent.status(sync)).lastAppliedRevision;
    gitRepo.installPushHook(`${agent.base}/hooks/${sync}`, secret);
    gitRepo.write({
      [`${ns}/os.yaml`]: `${head('Image', 'os', ns)}  interval: 1h\n  properties: {from_rejected: "yes"}\n  source:\n    oci: {repository: "${registry.host}/${repo}", tag: stable, insecure: true, sharing: private}\n`,
      [`${ns}/broken.yaml`]: `${head('Image', 'broken', ns)}  managementPolicy: unmanaged\n  source:\n    oci: {repository: "${registry.host}/${repo}", tag: stable, insecure: true, sharing: private}\n`,
    });
    const bad = gitRepo.commit('os gets a property; broken is unmanaged without import');
    gitRepo.push();
    await agent.waitFor(sync, 'the broken revision to be rejected', (s: SyncStatus) => s.rejectedRevision?.endsWith(bad) === true, 120_000);
    // The tag moves: the pass applies the Image as the last good revision declares it.
    const pushedAt = Date.now();
    const d3 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
    await waitForDigest(d3, 200_000);
    const now = await current();
    expect(now?.from_rejected).toBeUndefined();
    await agent.waitFor(sync, 'the registry run to be recorded', (s: SyncStatus) => s.history.some((r) => r.trigger === 'registry' && Date.parse(r.startedAt) >= pushedAt), 60_000);
    const status = await agent.status(sync);
    expect(status.history.find((r) => r.trigger === 'registry' && Date.parse(r.startedAt) >= pushedAt)?.revision).toBe(good);
    expect(status.rejectedRevision?.endsWith(bad)).toBe(true);
  }, 300_000);
});
