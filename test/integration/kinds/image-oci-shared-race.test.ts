import { randomBytes } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../../agent/act/projects.ts';
import { findSharedImagesProject } from '../../../agent/glance/shared-project.ts';
import type { GlanceImage } from '../../../agent/glance/version-rules.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { runApply } from '../../support/apply-child.ts';
import { FaultProxy } from '../../support/fault-proxy.ts';
import { blobGets, pushDiskAs, qcow2Disk, registry, registryLog } from './image-oci-fixtures.ts';

/**
 * One copy per cloud (the default: no `sharing` in these manifests) under
 * races and kill -9, against real Glance and the real registry behind a
 * loopback proxy that can hold or slow the disk's download:
 * - one run, two namespaces declaring the same digest at once (concurrency 8):
 *   one Glance image, two accepted members, one blob download;
 * - two `kupenstack apply` processes of the same owner, each with its own
 *   namespace, both held at the disk download until both are there, so both
 *   upload into the same image at once: still one image, both members, both
 *   runs succeed (the loser of Glance's queued → saving step waits for the
 *   winner, never deletes its image);
 * - `kill -9` of an apply while Glance is `saving` the shared image, then a
 *   re-run: one active image, the project a member.
 */

let ws: Workspace;
let proxy: FaultProxy;
const repo = `it/images-race-${randomBytes(3).toString('hex')}`;

const image = (ns: string, repository: string, tag: string): string => `${head('Image', 'os', ns)}  source:\n    oci: {repository: "${repository}", tag: ${tag}, insecure: true}\n`;

async function projectId(ns: string): Promise<string> {
  const p = (await ownedProjects(ws.cloud, ws.owner)).find((x) => x.namespace === ns);
  expect(p).toBeDefined();
  return p!.id;
}

/** Every image Glance holds for the digest, any owner, shown and hidden (the admin's view). */
async function imagesOf(digest: string): Promise<GlanceImage[]> {
  const q = { visibility: 'all', oci_manifest_digest: digest };
  const glance = ws.cloud.client('image');
  return [...(await glance.list<GlanceImage>('/images', 'images', q)), ...(await glance.list<GlanceImage>('/images', 'images', { ...q, os_hidden: true }))];
}

async function members(id: string): Promise<string[]> {
  const list = await ws.cloud.client('image').list<{ member_id: string; status: string }>(`/images/${id}/members`, 'members');
  return list.map((m) => `${m.member_id} ${m.status}`).sort();
}

/** Whole-blob GETs of this repository the proxy has seen (the Range pre-flight reads of the disk head excluded). */
const diskGets = (): number => proxy.seen.filter((s) => s.method === 'GET' && s.path.includes(`/v2/${repo}/blobs/`) && s.headers.range === undefined).length;

beforeAll(async () => {
  ws = new Workspace();
  proxy = await new FaultProxy(registry).start();
  writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir, concurrency: 8 }));
});
afterAll(async () => {
  await proxy?.stop();
  const shared = await findSharedImagesProject(ws.cloud, ws.owner);
  await ws.dispose().catch((err: unknown) => {
    console.log(ws.log.filter((l) => /Image|image/.test(l)).join('\n'));
    throw err;
  });
  if (shared) {
    await ws.cloud.identity.call('PATCH', `/projects/${shared}`, { json: { project: { enabled: false } } });
    await ws.cloud.identity.remove(`/projects/${shared}`);
  }
});

describe('one copy per cloud under races and kill -9', () => {
  it('one run, two namespaces declaring the same digest at once: one Glance image, two members, one download', async () => {
    const digest = await pushDiskAs('kupenstack-artifact', repo, 'one-run', qcow2Disk());
    ws.write({ 'one/a.yaml': image('ra1', `${registry}/${repo}`, 'one-run'), 'one/b.yaml': image('rb1', `${registry}/${repo}`, 'one-run') });
    const log = statSync(registryLog()).size;
    const outcome = await ws.apply({ path: join(ws.repo, 'one') });
    expect(outcome.report!.errors).toEqual([]);
    const found = await imagesOf(digest);
    expect(found.map((i) => i.status)).toEqual(['active']);
    expect(await members(found[0]!.id)).toEqual([`${await projectId('ra1')} accepted`, `${await projectId('rb1')} accepted`].sort());
    expect(blobGets(repo, log).count).toBe(1);
  }, 300_000);

  it('two agents importing the same digest at the same moment make one image, and both succeed', async () => {
    const digest = await pushDiskAs('kupenstack-artifact', repo, 'two-agents', qcow2Disk());
    const via = `${proxy.address}/${repo}`;
    ws.write({ 'ra/os.yaml': image('ra2', via, 'two-agents'), 'rb/os.yaml': image('rb2', via, 'two-agents') });
    // The disk download waits until both processes ask for it (60 s at most, so a run without the race ends and fails below).
    const since = diskGets();
    // How many downloads were waiting when the barrier opened: 2 is the race this test is about (audit W8).
    let met = 0;
    const both = (async () => {
      for (let i = 0; i < 600 && diskGets() - since < 2; i++) await sleep(100);
      met = diskGets() - since;
    })();
    proxy.rules = [{ method: 'GET', path: new RegExp(`/v2/${repo}/blobs/`), range: false, fault: { kind: 'hold', until: both } }];
    try {
      const a = runApply(ws, [], join(ws.repo, 'ra'));
      const b = runApply(ws, [], join(ws.repo, 'rb'));
      const codes = await Promise.all([a.done, b.done]);
      console.log(`two agents: ${met} disk downloads met at the barrier`);
      expect(codes, ws.log.join('\n')).toEqual([0, 0]);
      expect(met, 'both processes must be downloading at once, else nothing raced').toBe(2);
    } finally {
      proxy.rules = [];
    }
    const found = await imagesOf(digest);
    expect(found.map((i) => i.status)).toEqual(['active']);
    expect(await members(found[0]!.id)).toEqual([`${await projectId('ra2')} accepted`, `${await projectId('rb2')} accepted`].sort());
  }, 300_000);

  it('kill -9 while Glance is saving the shared image, then a re-run: one active image, the project a member', async () => {
    const digest = await pushDiskAs('kupenstack-artifact', repo, 'killed', qcow2Disk(8));
    ws.write({ 'rk/os.yaml': image('rk', `${proxy.address}/${repo}`, 'killed') });
    // ~8 MiB of qcow2 at 512 KiB/s, sent to Glance in 1 MiB chunks: the upload lasts seconds, long enough to be cut in the middle.
    proxy.rules = [{ method: 'GET', path: new RegExp(`/v2/${repo}/blobs/`), range: false, fault: { kind: 'slow', bytesPerSecond: 512 * 1024 } }];
    let seen: string[] = [];
    try {
      const run = runApply(ws, [], join(ws.repo, 'rk'));
      let ended = false;
      void run.done.then(() => (ended = true));
      for (let i = 0; i < 1200 && !ended && !seen.includes('saving'); i++) {
        seen = (await imagesOf(digest)).map((x) => x.status);
        if (!seen.includes('saving')) await sleep(100);
      }
      run.kill();
      expect(await run.done).toBeNull();
    } finally {
      proxy.rules = [];
    }
    // The moment was the intended one: Glance was receiving the shared image's data when the process died.
    expect(seen).toEqual(['saving']);
    console.log(`after kill -9: Glance holds ${JSON.stringify((await imagesOf(digest)).map((x) => x.status))}`);
    const rerun = runApply(ws, [], join(ws.repo, 'rk'));
    expect(await rerun.done, ws.log.join('\n')).toBe(0);
    const found = await imagesOf(digest);
    expect(found.map((i) => i.status)).toEqual(['active']);
    expect(await members(found[0]!.id)).toEqual([`${await projectId('rk')} accepted`]);
  }, 300_000);
});
