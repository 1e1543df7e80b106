import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPath } from '../../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../../agent/act/projects.ts';
import { versionName } from '../../../agent/glance/version-rules.ts';
import type { Plan } from '../../../agent/plan/plan.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { testCloudName } from '../../support/context.ts';
import { pushDiskAs, qcow2Disk, registry } from './image-oci-fixtures.ts';

/**
 * The whole apply with an OCI Image: a tag move is planned as an image line
 * plus a destructive rebuild for `onImageUpdate: rebuild` VMs (not for
 * `ignore`), and applied as a new Glance image the rebuilt VM runs on.
 */

let ws: Workspace;
const repo = `it/apply-${randomBytes(3).toString('hex')}`;
let d1 = '';

const files = (): Record<string, string> => ({
  'all.yaml': [
    `${head('Flavor', 'tiny', 'ocia')}  vcpus: 1\n  ram: 64\n  disk: 1\n`,
    `${head('Image', 'os', 'ocia')}  source:\n    oci: {repository: "${registry}/${repo}", tag: stable, insecure: true, sharing: private}\n`,
    `${head('VirtualMachine', 'follower', 'ocia')}  flavorRef: {name: tiny}\n  imageRef: {name: os}\n  onImageUpdate: rebuild\n`,
    `${head('VirtualMachine', 'keeper', 'ocia')}  flavorRef: {name: tiny}\n  imageRef: {name: os}\n  onImageUpdate: ignore\n`,
  ].join('---\n'),
});

async function plan(): Promise<Plan> {
  const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined });
  expect(outcome.report!.errors).toEqual([]);
  expect(outcome.report!.apiCalls.write).toBe(0);
  return outcome.report!;
}

async function serverImage(name: string): Promise<string> {
  const [project] = (await ownedProjects(ws.cloud, ws.owner)).filter((p) => p.namespace === 'ocia');
  const apis = await ws.cloud.forProject(project!.id);
  const [s] = await apis.compute.list<{ name: string; image: { id: string } }>('/servers/detail', 'servers', { project_id: project!.id, name: `^${name}$` });
  return s!.image.id;
}

beforeAll(async () => {
  ws = new Workspace();
  d1 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
  ws.write(files());
});
afterAll(async () => {
  await ws.dispose();
});

describe('apply and plan with an OCI image', () => {
  it('imports, then plans a tag move as an image line and a destructive rebuild for rebuild VMs only, and applies it', async () => {
    const first = await ws.apply();
    expect(first.report!.errors).toEqual([]);
    expect(first.report!.created).toBe(4);
    const oldId = await serverImage('follower');
    expect(await serverImage('keeper')).toBe(oldId);
    expect((await plan()).changes).toEqual([]);

    const d2 = await pushDiskAs('kupenstack-artifact', repo, 'stable', qcow2Disk());
    const p = await plan();
    expect(p.images).toEqual([{ address: 'ocia/Image/os', reference: `${registry}/${repo}:stable`, from: d1, to: d2 }]);
    const img = p.changes.find((c) => c.address === 'ocia/Image/os')!;
    expect(img.action).toBe('update');
    expect(img.fields.find((f) => f.path === 'digest')).toMatchObject({ before: d1, after: d2 });
    const follower = p.changes.find((c) => c.address === 'ocia/VirtualMachine/follower')!;
    expect(follower).toMatchObject({ action: 'update', destructive: true });
    expect(follower.reasons.map((r) => r.code)).toContain('root-disk-lost');
    expect(p.changes.find((c) => c.address === 'ocia/VirtualMachine/keeper')).toBeUndefined();

    const second = await ws.apply();
    expect(second.report!.errors).toEqual([]);
    const newId = await serverImage('follower');
    expect(newId).not.toBe(oldId);
    expect(await serverImage('keeper')).toBe(oldId);
    const [project] = (await ownedProjects(ws.cloud, ws.owner)).filter((x) => x.namespace === 'ocia');
    const apis = await ws.cloud.forProject(project!.id);
    expect(await apis.image.get(`/images/${oldId}`)).toMatchObject({ os_hidden: true, name: versionName('os', d1), status: 'active' });
    expect(await apis.image.get(`/images/${newId}`)).toMatchObject({ os_hidden: false, name: 'os', oci_manifest_digest: d2 });

    const settled = await plan();
    expect(settled.changes).toEqual([]);
    expect(settled.images).toEqual([]);
  });
});
