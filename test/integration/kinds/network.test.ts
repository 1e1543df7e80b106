import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { network } from '../../../agent/kinds/network/adapter.ts';
import { specHash } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';

let t: TestProject;
beforeAll(async () => {
  t = await testProject('network');
});
afterAll(async () => {
  await t.dispose();
});

describe('the Network adapter', () => {
  it('creates a marked network in the project, observes only its own, updates in place and deletes idempotently', async () => {
    const { ctx } = t;
    const m = manifest('Network', 'app-net', ctx.namespace, { mtu: 1400, description: 'app tier', tags: ['b', 'a'] });
    const desired = await network.desired(m, ctx);
    expect(desired).toEqual({ name: 'app-net', mtu: 1400, description: 'app tier', tags: ['a', 'b'] });

    // Someone else's network with the same name in the same project: never ours.
    const foreign = await ctx.apis.network.post<{ network: { id: string } }>('/networks', { network: { name: 'app-net' } });
    const marker = { owner: ctx.owner, ref: 'Network/app-net', specHash: specHash({}) };
    const created = await network.create(ctx, m, desired, marker);
    try {
      const raw = await ctx.apis.network.get<{ network: { project_id: string; description: string; mtu: number } }>(`/networks/${created.id}`);
      expect(raw.network.project_id).toBe(ctx.projectId);
      expect(raw.network.description).toBe(`app tier [kupenstack ${ctx.owner} Network/app-net ${marker.specHash}]`);

      let observed = await network.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);
      expect(observed[0]!.fields).toMatchObject({ name: 'app-net', mtu: 1400, description: 'app tier', tags: [] });

      await network.update(ctx, observed[0]!, { mtu: 1300, tags: ['a', 'b'], description: 'app' }, m);
      observed = await network.observe(ctx);
      expect(observed[0]!.fields).toMatchObject({ mtu: 1300, tags: ['a', 'b'], description: 'app' });
      expect(observed[0]!.marker).toEqual(marker);
    } finally {
      await network.delete(ctx, created);
      await network.delete(ctx, created);
      await ctx.apis.network.remove(`/networks/${foreign.network.id}`);
    }
    expect(await network.observe(ctx)).toEqual([]);
    expect(await network.get!(ctx, created.id)).toBeUndefined();
  });
});
