import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { difference, replaceHash } from '../../../agent/plan/diff.ts';
import { projectQuota } from '../../../agent/kinds/projectquota/adapter.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';

let t: TestProject;
let other: TestProject;
beforeAll(async () => {
  [t, other] = await Promise.all([testProject('quota'), testProject('quota-b')]);
});
afterAll(async () => {
  await Promise.all([t.dispose(), other.dispose()]);
});

type Quotas = Record<string, number>;

describe('the ProjectQuota adapter', () => {
  it('sets the project’s compute, network and block-storage quotas, observes them as one object, updates and resets them', async () => {
    const { ctx } = t;
    const compute = await ctx.cloud.adminCompute();
    const network = ctx.cloud.client('network');
    const volume = ctx.cloud.client('volumev3');
    const read = async (): Promise<{ compute: Quotas; network: Quotas; volume: Quotas }> => ({
      compute: (await compute.get<{ quota_set: Quotas }>(`/os-quota-sets/${ctx.projectId}`)).quota_set,
      network: (await network.get<{ quota: Quotas }>(`/quotas/${ctx.projectId}`)).quota,
      volume: (await volume.get<{ quota_set: Quotas }>(`/os-quota-sets/${ctx.projectId}`)).quota_set,
    });
    const defaults = await read();

    const m = manifest('ProjectQuota', 'limits', ctx.namespace, {
      compute: { instances: 5, cores: 10, ramMiB: 20480 },
      network: { floatingIPs: 2, securityGroupRules: 50 },
      blockStorage: { gigabytes: 100, perVolumeGigabytes: 20 },
    });
    const desired = await projectQuota.desired(m, ctx);
    expect(desired).toEqual({
      'compute.instances': 5,
      'compute.cores': 10,
      'compute.ram': 20480,
      'network.floatingip': 2,
      'network.security_group_rule': 50,
      'blockStorage.gigabytes': 100,
      'blockStorage.per_volume_gigabytes': 20,
    });
    const marker = { owner: ctx.owner, ref: 'ProjectQuota/limits', specHash: replaceHash(projectQuota, desired) };

    // Quotas always exist: untagged, they are not ours. Another owner's tag is not ours either.
    expect(await projectQuota.observe(ctx)).toEqual([]);
    await ctx.cloud.identity.put(`/projects/${ctx.projectId}/tags/kupenstack-quota:${other.ctx.owner}:limits`, undefined, [201, 204]);
    expect(await projectQuota.observe(ctx)).toEqual([]);
    // This owner's quota of another project is that project's, never this one's.
    const elsewhere = await projectQuota.create({ ...other.ctx, owner: ctx.owner }, manifest('ProjectQuota', 'limits', other.ctx.namespace, {}), { 'compute.instances': 1 }, marker);

    const created = await projectQuota.create(ctx, m, desired, marker);
    try {
      expect(created.id).toBe(ctx.projectId);
      const now = await read();
      expect(now.compute).toMatchObject({ instances: 5, cores: 10, ram: 20480, key_pairs: defaults.compute.key_pairs });
      expect(now.network).toMatchObject({ floatingip: 2, security_group_rule: 50, network: defaults.network.network });
      expect(now.volume).toMatchObject({ gigabytes: 100, per_volume_gigabytes: 20, volumes: defaults.volume.volumes });
      const project = await ctx.cloud.identity.get<{ project: { tags: string[] } }>(`/projects/${ctx.projectId}`);
      expect(project.project.tags).toContain(`kupenstack-quota:${ctx.owner}:limits`);

      let observed = await projectQuota.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([ctx.projectId]);
      expect(observed[0]!.marker).toEqual(marker);
      expect(observed[0]!.name).toBe(ctx.projectName);

      // No drift: a second apply writes nothing.
      const writes = ctx.cloud.counters.write;
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(difference(projectQuota, desired, observed[0]!)).toMatchObject({ updates: {}, replace: false });
      expect(ctx.cloud.counters.write).toBe(writes);

      // A create retried after a crash is the same idempotent writes: still one object, same values.
      await projectQuota.create(ctx, m, desired, marker);
      expect((await projectQuota.observe(ctx)).map((r) => r.id)).toEqual([ctx.projectId]);

      // In place, only the services that changed are written.
      const before = ctx.cloud.counters.sum((e) => e.method === 'PUT' && e.service === 'volumev3');
      await projectQuota.update(ctx, observed[0]!, { 'compute.cores': 12, 'network.floatingip': 3 }, m);
      expect(ctx.cloud.counters.sum((e) => e.method === 'PUT' && e.service === 'volumev3')).toBe(before);
      observed = await projectQuota.observe(ctx);
      expect(observed[0]!.fields).toMatchObject({ 'compute.cores': 12, 'network.floatingip': 3, 'blockStorage.gigabytes': 100 });
    } finally {
      await projectQuota.delete(ctx, created);
      await projectQuota.delete(ctx, created);
      await projectQuota.delete({ ...other.ctx, owner: ctx.owner }, elsewhere);
    }
    // Back to the cloud's defaults, untagged; the other owner's tag is left alone.
    expect(await read()).toEqual(defaults);
    expect(await projectQuota.observe(ctx)).toEqual([]);
    const project = await ctx.cloud.identity.get<{ project: { tags: string[] } }>(`/projects/${ctx.projectId}`);
    expect(project.project.tags).toContain(`kupenstack-quota:${other.ctx.owner}:limits`);
    expect(project.project.tags.filter((tag) => tag.startsWith(`kupenstack-quota:${ctx.owner}:`))).toEqual([]);
  });

  it('hands the quotas over to a renamed manifest without the old one’s prune resetting them', async () => {
    const { ctx } = t;
    const old = manifest('ProjectQuota', 'old', ctx.namespace, { compute: { instances: 7 } });
    const renamed = manifest('ProjectQuota', 'new', ctx.namespace, { compute: { instances: 8 } });
    const oldRemote = await projectQuota.create(ctx, old, await projectQuota.desired(old, ctx), { owner: ctx.owner, ref: 'ProjectQuota/old', specHash: replaceHash(projectQuota, {}) });
    const observedOld = await projectQuota.observe(ctx);
    expect(observedOld.map((r) => r.marker?.ref)).toEqual(['ProjectQuota/old']);
    const newRemote = await projectQuota.create(ctx, renamed, await projectQuota.desired(renamed, ctx), { owner: ctx.owner, ref: 'ProjectQuota/new', specHash: replaceHash(projectQuota, {}) });
    try {
      // The engine prunes the old manifest after creating the new one.
      await projectQuota.delete(ctx, oldRemote);
      const observed = await projectQuota.observe(ctx);
      expect(observed.map((r) => r.marker?.ref)).toEqual(['ProjectQuota/new']);
      expect(observed[0]!.fields['compute.instances']).toBe(8);
    } finally {
      await projectQuota.delete(ctx, newRemote);
    }
    expect(await projectQuota.observe(ctx)).toEqual([]);
  });
});
