import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { propDigest } from '../../../agent/glance/version-rules.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { freePort } from '../../support/agent-harness.ts';
import { testCloudName } from '../../support/context.ts';
import { startNotifyingRegistry, type NotifyingRegistry } from '../../support/notifying-registry.ts';
import { pushDiskAs, qcow2Disk, target } from '../kinds/image-oci-fixtures.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * The in-cluster controller receives a registry's notifications on its
 * --listen port (a distribution 2.8 of its own, notifications.endpoints
 * pointed at it, the shared secret in a Secret the controller reads): a tag
 * moved in the registry reaches the Image custom resource (status, Event) and
 * Glance at once, though the Image's interval and the controller's resync
 * are an hour. An event for a repository no Image follows makes no registry
 * request (the registry's access log).
 */
const repoRoot = join(import.meta.dirname, '../../..');
const run = randomBytes(3).toString('hex');
const owner = `rhc${run}`;
const ns = `rhc-${run}`;
const system = `rhc-${run}-system`;
const prefix = 'ks-';
const optIn = `rhc-${run}`;
const repo = `controller-hooks/os-${run}`;
const unrelated = `controller-hooks/other-${run}`;
/** Followed only by an Image the controller rejects (Stalled): a move of it must write nothing. */
const rejectedRepo = `controller-hooks/bad-${run}`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: ControllerProcess;
let registry: NotifyingRegistry;
let port = 0;
const secret = randomUUID();
let d1 = '';

interface ImageCr {
  metadata: { generation?: number; annotations?: Record<string, string> };
  status?: { observedGeneration?: number; lastSyncTime?: string; digest?: string; observed?: { digest?: string }; conditions?: { type: string; status: string; reason: string; message: string }[] };
}

function imageCr(): ImageCr | undefined {
  const r = kubectl(['get', 'images.kupenstack.io', 'os', '-n', ns, '-o', 'json']);
  return r.status === 0 ? (JSON.parse(r.stdout) as ImageCr) : undefined;
}

const crDigest = (o: ImageCr | undefined): string | undefined => o?.status?.digest ?? o?.status?.observed?.digest;
const crReady = (o: ImageCr | undefined): boolean => o?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation;

function events(name: string): { reason: string; message: string; lastTimestamp?: string; eventTime?: string; metadata: { creationTimestamp: string } }[] {
  return getJson<{ items: { reason: string; message: string; involvedObject: { name: string; kind: string }; metadata: { creationTimestamp: string } }[] }>(['get', 'events', '-n', ns]).items.filter((e) => e.involvedObject.name === name && e.involvedObject.kind === 'Image');
}

async function projectId(): Promise<string | undefined> {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p?.id;
}

/** The version Glance shows under the Image's name (what a user boots). */
async function glanceDigest(): Promise<unknown> {
  const project = await projectId();
  if (!project) return undefined;
  const images = await (await cloud.forProject(project)).image.list<Record<string, unknown>>('/images', 'images', { owner: project, name: 'os' });
  return images.find((i) => i.status === 'active' && !i.os_hidden)?.[propDigest];
}

/** Requests the controller sent to the registry (its User-Agent), in the access log from `from` on. */
function controllerRequests(from: number): string[] {
  return registry
    .log()
    .slice(from)
    .split('\n')
    .filter((l) => l.includes('"kupenstack/'));
}

/** The messages of the controller's log lines (engine and run lines, hooks), from `from` (a character offset) on: it logs JSON, every line checked. */
function textLines(from = 0): string[] {
  return controller.jsonLines(from).map((l) => String(l.msg));
}

/** The controller's log lines with this message, from `from` (a character offset) on. */
function lines(msg: string, from = 0): Record<string, unknown>[] {
  return controller.jsonLines(from).filter((l) => l.msg === msg);
}

const image = (tag: string): string => `apiVersion: kupenstack.io/v1alpha1
kind: Image
metadata: {name: os, namespace: ${ns}}
spec:
  interval: 1h
  source:
    oci: {repository: "${registry.host}/${repo}", tag: ${tag}, insecure: true, sharing: private}
`;

beforeAll(async () => {
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'deploy/crds')]);
  kubectlOk(['wait', '--for=condition=Established', '--timeout=60s', '-f', join(repoRoot, 'deploy/crds')]);
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kupenstack-system' } }) });
  kubectlOk(['apply', '--server-side', '--force-conflicts', '-k', join(repoRoot, 'deploy/rbac')]);
  kubectlOk(['create', 'namespace', ns]);
  kubectlOk(['label', 'namespace', ns, `kupenstack.io/project=${optIn}`]);
  kubectlOk(['create', 'namespace', system]);
  kubectlOk(['create', 'secret', 'generic', 'registry-hook', '-n', system, `--from-literal=token=${secret}`]);

  port = await freePort();
  registry = await startNotifyingRegistry(`http://127.0.0.1:${port}/hooks/registry`, secret);
  target.registry = registry.host;
  d1 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());

  // As in a pod: its own ServiceAccount and deploy/rbac's ClusterRole; an hour's resync, so only the notification can make it act.
  controller = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), [
    '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '1h', '--opt-in-label', `kupenstack.io/project=${optIn}`,
    '--no-syncs', '--listen', `127.0.0.1:${port}`, '--registry-hook-secret', `${system}/registry-hook`, '--log-format', 'json',
  ]);
  await controller.start();
  kubectlOk(['apply', '-f', '-'], { input: image('stable') });
  await until('the Image to be Ready with the first digest', async () => crReady(imageCr()) && (await glanceDigest()) === d1, 300_000, 1000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${controller.log().slice(-4000)}`);
  });
}, 600_000);

afterAll(async () => {
  // The controller deletes what it made (Glance versions, then the project with the namespace) before it stops.
  if (controller?.child) {
    kubectl(['delete', 'images.kupenstack.io', 'os', '-n', ns, '--wait=false']);
    await until('the Image to be deleted', () => Promise.resolve(imageCr() === undefined), 120_000).catch(() => undefined);
    kubectl(['delete', 'namespace', ns, '--wait=false']);
    await until('the project to be deleted', async () => (await projectId()) === undefined, 120_000).catch(() => undefined);
  }
  await controller?.stop();
  const left = kubectl(['get', 'images.kupenstack.io', '-n', ns, '-o', 'name']);
  for (const name of left.stdout.split('\n').filter(Boolean)) kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  kubectl(['delete', 'namespace', system, '--wait=false']);
  target.registry = '127.0.0.1:5050';
  await registry?.stop();
}, 400_000);

describe('registry notifications to the in-cluster controller', () => {
  it('a tag moved in the registry reaches the Image resource (status, a TagMoved Event) and Glance at once, whatever the interval and resync', async () => {
    const from = controller.log().length;
    const pushedAt = Date.now();
    const d2 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
    expect(d2).not.toBe(d1);
    await until('the notification', () => Promise.resolve(lines('registry notification: tag moved, resolving now', from).length > 0), 60_000);
    expect(lines('registry notification: tag moved, resolving now', from)[0]!.images).toEqual([`${ns}/Image/os`]);
    await until('Glance to show the new digest under the Image name', async () => (await glanceDigest()) === d2, 240_000, 200).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${controller.log().slice(from).slice(-4000)}`);
    });
    console.log(`tag move → new active Glance version (controller): ${Date.now() - pushedAt} ms`);
    // The Image alone first, then the namespace's full pass: its tag move was applied before the full pass
    // listed any other kind (the full pass's run line and its timing come after, in the same run).
    // The run line after the Image-only pass: a run that was ending when this test began (the registry
    // retries the first push's notification until the controller listens) may log its own line first.
    const imageOnly = (run: string[]): number => run.findIndex((l) => l.includes(`images  ${ns}: ${ns}/Image/os applied first`));
    const fullPass = (run: string[]): number => {
      const after = imageOnly(run);
      return after < 0 ? -1 : run.findIndex((l, i) => i > after && l.includes(`reconciled ${ns} `));
    };
    await until('the run to end', () => Promise.resolve(fullPass(textLines(from)) >= 0), 120_000);
    const run = textLines(from);
    const first = imageOnly(run);
    const reconciled = fullPass(run);
    console.log(run.filter((l) => l.includes(ns)).slice(0, 12).join('\n'));
    expect(first, 'the Image-only pass').not.toBe(-1);
    // The tag move was written by the Image-only pass.
    expect(run[first]).toContain('1 updated');
    expect(first).toBeLessThan(reconciled);
    // The full pass found the new version in place: nothing left for it to write.
    expect(run[reconciled]).toMatch(/0 created, 0 updated, 0 deleted/);
    const timing = run.find((l, i) => i > reconciled && l.includes(`timing  ${ns}:`)) ?? '';
    const at = (step: string): number => Number(new RegExp(`${step} \\+(\\d+) ms`).exec(timing)?.[1] ?? NaN);
    expect(at('images first')).toBeLessThan(at('engine'));
    await until('the Image resource to say the new digest', () => Promise.resolve(crReady(imageCr()) && crDigest(imageCr()) === d2), 60_000);
    // Written by the run the notification started (the resync is an hour away).
    expect(Date.parse(imageCr()?.status?.lastSyncTime ?? '')).toBeGreaterThanOrEqual(pushedAt - 1000);
    // The Event says the tag moved, from which digest to which (not a drift correction).
    await until('a TagMoved Event on the Image', () => Promise.resolve(events('os').some((e) => e.reason === 'TagMoved' && e.message.includes(d1) && e.message.includes(d2))), 60_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(events('os').map((e) => [e.reason, e.message]))}`);
    });
    expect(events('os').filter((e) => e.reason === 'DriftCorrected')).toEqual([]);
  }, 400_000);

  it('an event for a repository no Image follows makes no registry request', async () => {
    const from = registry.log().length;
    const logFrom = controller.log().length;
    await pushDiskAs('kupenstack-artifact', unrelated, 'stable', qcow2Disk());
    await until('the unrelated event', () => Promise.resolve(lines('registry notification ignored', logFrom).some((l) => JSON.stringify(l.pushes ?? []).includes(unrelated))), 60_000);
    // Give a wrongly started run time to reach the registry before looking.
    await sleep(3000);
    expect(registry.log().slice(from)).toContain(`PUT /v2/${unrelated}/manifests/stable`);
    expect(controllerRequests(from)).toEqual([]);
  }, 120_000);

  it('a replica that is not the leader passes a notification on (an annotation on the Image) and the acting controller resolves the tag again', async () => {
    // A Lease held by someone else for an hour: the second replica stays a follower the whole test.
    const lease = `rhc-${run}-follower`;
    const now = new Date().toISOString().replace('Z', '000Z');
    kubectlOk(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: lease, namespace: 'kupenstack-system' }, spec: { holderIdentity: 'another-replica', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now } }) });
    const followerPort = await freePort();
    const follower = new ControllerProcess(serviceAccountKubeconfig('kupenstack-system', 'kupenstack-controller'), [
      '--cloud', testCloudName, '--owner', owner, '--project-prefix', prefix, '--resync', '1h', '--opt-in-label', `kupenstack.io/project=${optIn}`,
      '--no-syncs', '--listen', `127.0.0.1:${followerPort}`, '--registry-hook-secret', `${system}/registry-hook`, '--leader-elect', '--leader-election-id', lease,
    ]);
    await follower.start();
    try {
      const from = registry.log().length;
      const logFrom = controller.log().length;
      const postedAt = Date.now();
      const body = JSON.stringify({ events: [{ id: randomUUID(), timestamp: new Date().toISOString(), action: 'push', target: { repository: repo, tag: 'stable' }, request: { host: registry.host } }] });
      const res = await fetch(`http://127.0.0.1:${followerPort}/hooks/registry`, { method: 'POST', headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', authorization: `Bearer ${secret}` }, body });
      expect(res.status).toBe(202);
      // The sender learns how many Images move, never which (issue 47: nothing tenant-identifying); the follower's log names it.
      const answer = await res.text();
      expect(JSON.parse(answer)).toMatchObject({ result: 'triggered', resolving: { images: 1, syncs: 0 } });
      expect(answer).not.toContain(ns);
      await until('the follower to log the Image it moved', () => Promise.resolve(follower.log().includes(`${ns}/Image/os`)), 10_000);
      // The follower wrote the request onto the Image, not to the registry or Glance.
      expect(Date.parse(imageCr()?.metadata.annotations?.['kupenstack.io/resolve-requested-at'] ?? '')).toBeGreaterThanOrEqual(postedAt - 1000);
      // The acting controller (resync an hour away, no notification of its own) asks the registry for the tag and writes the Image's status.
      await until('the acting controller to resolve the tag again', () => Promise.resolve(controllerRequests(from).some((l) => l.includes(`/v2/${repo}/manifests/stable`))), 120_000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${controller.log().slice(logFrom).slice(-3000)}\nfollower:\n${follower.log().slice(-3000)}`);
      });
      // A run of the namespace, in the acting controller's log (its status is rewritten only when it changes; the digest did not move).
      await until('the run to finish', () => Promise.resolve(controller.log().slice(logFrom).includes(`reconciled ${ns} `)), 120_000);
      expect(follower.log()).not.toContain(`reconciled ${ns} `);
      expect(crReady(imageCr())).toBe(true);
      expect(lines('registry notification: tag moved, resolving now', logFrom)).toEqual([]);
      expect(getJson<{ spec: { holderIdentity: string } }>(['get', 'lease', lease, '-n', 'kupenstack-system', '-o', 'json']).spec.holderIdentity).toBe('another-replica');
      expect(follower.log()).not.toContain(secret);
    } finally {
      await follower.stop();
      kubectl(['delete', 'lease', lease, '-n', 'kupenstack-system']);
    }
  }, 400_000);

  it('a moved tag that only a rejected Image follows writes nothing', async () => {
    // Valid to the API server (its CEL rules), rejected by KupenStack's validation (unmanaged without import): Stalled.
    kubectlOk(['apply', '-f', '-'], { input: `apiVersion: kupenstack.io/v1alpha1
kind: Image
metadata: {name: bad, namespace: ${ns}}
spec:
  managementPolicy: unmanaged
  interval: 1h
  source:
    oci: {repository: "${registry.host}/${rejectedRepo}", tag: stable, insecure: true, sharing: private}
` });
    const stalled = (): boolean => getJson<{ status?: { conditions?: { type: string; status: string }[] } }>(['get', 'images.kupenstack.io', 'bad', '-n', ns]).status?.conditions?.some((c) => c.type === 'Stalled' && c.status === 'True') === true;
    await until('the rejected Image to be Stalled', () => Promise.resolve(stalled()), 120_000);
    const from = registry.log().length;
    const logFrom = controller.log().length;
    await pushDiskAs('kupenstack-artifact', rejectedRepo, 'stable', qcow2Disk());
    await until('the notification naming the rejected Image', () => Promise.resolve(lines('registry notification: tag moved, resolving now', logFrom).some((l) => JSON.stringify(l.images) === JSON.stringify([`${ns}/Image/bad`]))), 60_000);
    // The run it started takes the rejected Image for its Image-only pass, finds it invalid, and goes on to the full pass.
    const skipped = (): number => textLines(logFrom).findIndex((l) => l.includes(`images  ${ns}: ${ns}/Image/bad not applied first`));
    await until('the run it started to pass over the rejected Image', () => Promise.resolve(skipped() >= 0), 120_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\n${textLines(logFrom).join('\n').slice(-3000)}`);
    });
    await until('that run to end', () => Promise.resolve(textLines(logFrom).slice(skipped()).some((l) => l.includes(`reconciled ${ns} `))), 120_000);
    // Nothing was asked of the registry about it, and Glance has no image of it.
    expect(controllerRequests(from).filter((l) => l.includes(rejectedRepo))).toEqual([]);
    const project = await projectId();
    const named = await (await cloud.forProject(project!)).image.list<{ id: string }>('/images', 'images', { owner: project!, name: 'bad' });
    expect(named).toEqual([]);
    expect(stalled()).toBe(true);
    kubectlOk(['delete', 'images.kupenstack.io', 'bad', '-n', ns, '--wait=false']);
  }, 300_000);

  it('a wrong secret is refused, and no secret reaches the log', async () => {
    const body = JSON.stringify({ events: [{ id: randomUUID(), timestamp: new Date().toISOString(), action: 'push', target: { repository: repo, tag: 'stable' }, request: { host: registry.host } }] });
    const post = (auth: string): Promise<Response> => fetch(`http://127.0.0.1:${port}/hooks/registry`, { method: 'POST', headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', authorization: auth }, body });
    const bad = await post('Bearer not-the-secret');
    expect(bad.status).toBe(401);
    expect(await bad.text()).not.toContain(secret);
    const from = controller.log().length;
    const good = await post(`Bearer ${secret}`);
    expect(good.status).toBe(202);
    // Counts to the sender, never the Images' namespaces (issue 47); the controller's log names them.
    const answer = await good.text();
    expect(JSON.parse(answer)).toMatchObject({ result: 'triggered', resolving: { images: 1, syncs: 0 } });
    expect(answer).not.toContain(ns);
    await until('the notification logged', () => Promise.resolve(lines('registry notification: tag moved, resolving now', from).length > 0), 10_000);
    expect(lines('registry notification: tag moved, resolving now', from)[0]!.images).toEqual([`${ns}/Image/os`]);
    expect(controller.log()).not.toContain(secret);
  }, 60_000);
});
