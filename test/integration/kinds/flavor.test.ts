import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { difference } from '../../../agent/plan/diff.ts';
import { flavor, flavorId } from '../../../agent/kinds/flavor/adapter.ts';
import { OpenStackError } from '../../../agent/openstack/errors.ts';
import { specHash } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';

let t: TestProject;
let other: TestProject;
beforeAll(async () => {
  [t, other] = await Promise.all([testProject('flavor'), testProject('flavor-b')]);
});
afterAll(async () => {
  await Promise.all([t.dispose(), other.dispose()]);
});

interface RawFlavor {
  id: string;
  name: string;
  description: string;
  vcpus: number;
  'os-flavor-access:is_public': boolean;
  extra_specs: Record<string, string>;
}

describe('the Flavor adapter', () => {
  it('creates a private, marked flavor for the project, observes only its own, grants access and updates in place', async () => {
    const { ctx } = t;
    const compute = await ctx.cloud.adminCompute();
    const m = manifest('Flavor', 'small', ctx.namespace, { vcpus: 1, ram: 128, disk: 1, description: 'tiny', extraSpecs: { 'hw:cpu_policy': 'shared' } });
    const desired = await flavor.desired(m, ctx);
    expect(desired).toEqual({
      name: `${ctx.projectName}-small`,
      description: 'tiny',
      vcpus: 1,
      ram: 128,
      disk: 1,
      extra_specs: { 'hw:cpu_policy': 'shared' },
      'os-flavor-access:is_public': false,
      access: [ctx.projectId],
    });
    const marker = { owner: ctx.owner, ref: 'Flavor/small', specHash: specHash({ vcpus: 1 }) };

    // Look-alikes that are never ours: an unmarked flavor with our kind of name; the same
    // manifest in another namespace of the same owner; a flavor of another owner.
    const unmarked = await compute.post<{ flavor: RawFlavor }>('/flavors', { flavor: { name: `${ctx.projectName}-small-copy`, vcpus: 1, ram: 128, disk: 1, description: 'tiny', 'os-flavor-access:is_public': false } });
    const sameOwnerElsewhere = { ...other.ctx, owner: ctx.owner };
    const elsewhere = await flavor.create(sameOwnerElsewhere, manifest('Flavor', 'small', other.ctx.namespace, {}), await flavor.desired(m, sameOwnerElsewhere), marker);
    const otherOwner = await flavor.create(other.ctx, manifest('Flavor', 'big', other.ctx.namespace, {}), { ...desired, name: `${other.ctx.projectName}-big` }, { ...marker, owner: other.ctx.owner, ref: 'Flavor/big' });

    const created = await flavor.create(ctx, m, desired, marker);
    try {
      expect(created.id).toBe(flavorId(ctx.projectId, m.address));
      const raw = (await compute.get<{ flavor: RawFlavor }>(`/flavors/${created.id}`)).flavor;
      expect(raw.name).toBe(`${ctx.projectName}-small`);
      expect(raw.description).toBe(`tiny [kupenstack ${ctx.owner} Flavor/small ${marker.specHash}]`);
      expect(raw['os-flavor-access:is_public']).toBe(false);
      // Access is a follow-up step, not part of create().
      expect((await compute.get<{ flavor_access: unknown[] }>(`/flavors/${created.id}/os-flavor-access`)).flavor_access).toEqual([]);

      let observed = await flavor.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);

      // The engine's follow-up: what create() left for later.
      let diff = difference(flavor, desired, observed[0]!);
      expect(diff.replace).toBe(false);
      expect(diff.updates).toEqual({ access: [ctx.projectId], extra_specs: { 'hw:cpu_policy': 'shared' } });
      await flavor.update(ctx, observed[0]!, diff.updates, m);
      const access = await compute.get<{ flavor_access: { tenant_id: string }[] }>(`/flavors/${created.id}/os-flavor-access`);
      expect(access.flavor_access.map((a) => a.tenant_id)).toEqual([ctx.projectId]);
      // The project itself now sees the private flavor.
      expect((await ctx.apis.compute.list<{ id: string }>('/flavors', 'flavors')).map((f) => f.id)).toContain(created.id);

      // No drift: the unchanged manifest matches what is observed, so a second apply writes nothing.
      const writes = ctx.cloud.counters.write;
      observed = await flavor.observe(ctx);
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const key of Object.keys(desired)) expect(observed[0]!.fields[key], key).toEqual(desired[key]);
      diff = difference(flavor, desired, observed[0]!);
      expect(diff.updates).toEqual({});
      expect(diff.replace).toBe(false);
      expect(ctx.cloud.counters.write).toBe(writes);

      // In place: description and extra specs (one set, one dropped).
      await flavor.update(ctx, observed[0]!, { description: 'smallest', extra_specs: { 'hw:mem_page_size': 'small' } }, m);
      observed = await flavor.observe(ctx);
      expect(observed[0]!.fields).toMatchObject({ description: 'smallest', extra_specs: { 'hw:mem_page_size': 'small' }, access: [ctx.projectId] });
      expect(observed[0]!.marker).toEqual(marker);
      expect((await compute.get<{ flavor: RawFlavor }>(`/flavors/${created.id}`)).flavor.description).toBe(`smallest [kupenstack ${ctx.owner} Flavor/small ${marker.specHash}]`);

      // A changed vcpus is a changed manifest (the engine replaces), not an update.
      const bigger = await flavor.desired(manifest('Flavor', 'small', ctx.namespace, { vcpus: 2, ram: 128, disk: 1 }), ctx);
      expect(difference(flavor, bigger, observed[0]!).replace).toBe(true);

      // A create retried after a crash (the POST went through) conflicts on the derived id: no duplicate.
      const retried = await flavor.create(ctx, m, desired, marker).catch((e: unknown) => e);
      expect(retried).toBeInstanceOf(OpenStackError);
      expect((retried as OpenStackError).conflict).toBe(true);
      expect((await flavor.observe(ctx)).map((r) => r.id)).toEqual([created.id]);

      expect((await flavor.get!(ctx, created.id))?.fields.access).toEqual([ctx.projectId]);
    } finally {
      await flavor.delete(ctx, created);
      await flavor.delete(ctx, created);
      await flavor.delete(sameOwnerElsewhere, elsewhere);
      await flavor.delete(other.ctx, otherOwner);
      await compute.remove(`/flavors/${unmarked.flavor.id}`);
    }
    expect(await flavor.observe(ctx)).toEqual([]);
    expect(await flavor.get!(ctx, created.id)).toBeUndefined();
  });

  it('refuses a name another flavor already holds, with a message that says what to change', async () => {
    const { ctx } = t;
    const compute = await ctx.cloud.adminCompute();
    const squatter = await compute.post<{ flavor: RawFlavor }>('/flavors', { flavor: { name: `${ctx.projectName}-taken`, vcpus: 1, ram: 64, disk: 0 } });
    try {
      const m = manifest('Flavor', 'taken', ctx.namespace, { vcpus: 1, ram: 64, disk: 0 });
      const err = await flavor.create(ctx, m, await flavor.desired(m, ctx), { owner: ctx.owner, ref: 'Flavor/taken', specHash: '00000000' }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'flavor.name-taken' });
      expect(await flavor.observe(ctx)).toEqual([]);
    } finally {
      await compute.remove(`/flavors/${squatter.flavor.id}`);
    }
  });
});
