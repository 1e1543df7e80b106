import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Remote } from '../../../agent/kinds/kit/adapter.ts';
import { virtualMachine, vmUnobservedFields } from '../../../agent/kinds/virtualmachine/adapter.ts';
import type { ServiceClient } from '../../../agent/openstack/service.ts';
import { markerMetadata, ownerTag, specHash, stableJson, type Marker } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';

let t: TestProject;
let admin: ServiceClient;
const cleanup: (() => Promise<unknown>)[] = [];

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

/** Polls get() until health says ready, as the engine does after an action. */
async function ready(id: string, status?: string): Promise<Remote> {
  return until(`server ${id} ready${status ? ` and ${status}` : ''}`, async () => {
    const r = await virtualMachine.get!(t.ctx, id);
    if (!r) throw new Error(`server ${id} is gone`);
    const h = virtualMachine.health!(r);
    if (h.state === 'failed') throw new Error(`server ${id} failed: ${h.reason}`);
    return h.state === 'ready' && (!status || r.status === status) ? r : undefined;
  });
}

async function rawServer(id: string): Promise<Record<string, unknown>> {
  return (await t.ctx.apis.compute.get<{ server: Record<string, unknown> }>(`/servers/${id}`)).server;
}

async function image(name: string): Promise<string> {
  const { image: glance } = t.ctx.apis;
  const img = await glance.post<{ id: string }>('/images', { name, disk_format: 'raw', container_format: 'bare' }, [201]);
  cleanup.push(() => glance.remove(`/images/${img.id}`));
  await glance.call('PUT', `/images/${img.id}/file`, { body: new Uint8Array(4096), headers: { 'content-type': 'application/octet-stream' } });
  return img.id;
}

async function flavor(name: string, ram: number): Promise<string> {
  const f = (await admin.post<{ flavor: { id: string } }>('/flavors', { flavor: { name: `${name}-${t.ctx.owner}`, ram, vcpus: 1, disk: 1, 'os-flavor-access:is_public': false } })).flavor;
  cleanup.push(() => admin.remove(`/flavors/${f.id}`));
  await admin.post(`/flavors/${f.id}/action`, { addTenantAccess: { tenant: t.ctx.projectId } });
  return f.id;
}

async function deleteServer(id: string): Promise<void> {
  await t.ctx.apis.compute.remove(`/servers/${id}`);
  await until(`server ${id} deleted`, async () => ((await t.ctx.apis.compute.find(`/servers/${id}`)) ? undefined : true));
}

/** Update fields that differ, as the engine computes them. */
function changes(desired: Record<string, unknown>, remote: Remote): Record<string, unknown> {
  return Object.fromEntries(Object.entries(desired).filter(([k, v]) => virtualMachine.fields[k] === 'update' && stableJson(v) !== stableJson(remote.fields[k])));
}

beforeAll(async () => {
  t = await testProject('vm');
  admin = await t.cloud.adminCompute();
  const { ctx, ids } = t;
  ids.set('Flavor/small', await flavor('small', 64));
  ids.set('Flavor/big', await flavor('big', 128));
  ids.set('Image/base', await image('base'));
  ids.set('Image/other', await image('other'));
  const { network } = ctx.apis;
  const net = (await network.post<{ network: { id: string } }>('/networks', { network: { name: 'app-net' } })).network;
  cleanup.push(() => network.remove(`/networks/${net.id}`));
  await network.post('/subnets', { subnet: { network_id: net.id, cidr: '10.20.0.0/24', ip_version: 4 } });
  ids.set('Network/app-net', net.id);
  for (const name of ['web', 'ssh']) {
    const sg = (await network.post<{ security_group: { id: string } }>('/security-groups', { security_group: { name } })).security_group;
    cleanup.push(() => network.remove(`/security-groups/${sg.id}`));
    ids.set(`SecurityGroup/${name}`, sg.id);
  }
  const kp = (await ctx.apis.compute.post<{ keypair: { name: string } }>('/os-keypairs', { keypair: { name: `deploy-${ctx.owner}` } })).keypair;
  cleanup.push(() => ctx.apis.compute.remove(`/os-keypairs/${kp.name}`));
  ids.set('KeyPair/deploy', kp.name);
  const vol = (await ctx.apis.volume.post<{ volume: { id: string } }>('/volumes', { volume: { size: 1, name: 'data' } })).volume;
  cleanup.push(async () => {
    await until('volume detached', async () => ((await ctx.apis.volume.find<{ volume: { status: string } }>(`/volumes/${vol.id}`))?.volume.status === 'in-use' ? undefined : true));
    await ctx.apis.volume.remove(`/volumes/${vol.id}`);
  });
  ids.set('Volume/data', vol.id);
});

afterAll(async () => {
  // Servers first (they hold ports, volumes, images), then the rest in reverse order.
  const servers = await t.ctx.apis.compute.list<{ id: string }>('/servers', 'servers', { project_id: t.ctx.projectId });
  await Promise.all(servers.map((s) => deleteServer(s.id)));
  for (const step of cleanup.reverse()) await step().catch((err: unknown) => console.error('cleanup:', err));
  await t.dispose();
});

const spec = {
  flavorRef: { name: 'small' },
  imageRef: { name: 'base' },
  networks: [{ networkRef: { name: 'app-net' }, fixedIP: '10.20.0.10' }],
  securityGroupRefs: [{ name: 'web' }],
  keyPairRef: { name: 'deploy' },
  userData: '#cloud-config\nhostname: web\n',
  metadata: { role: 'web' },
  tags: ['tier-b', 'tier-a'],
  description: 'web server',
  configDrive: true,
  availabilityZone: 'nova',
};

describe('the VirtualMachine adapter', () => {
  const m = (): ReturnType<typeof manifest> => manifest('VirtualMachine', 'web', t.ctx.namespace, spec);
  let id = '';
  let marker: Marker;

  it('creates a marked server in the project in one call, and observes exactly it with no drift', async () => {
    const { ctx } = t;
    const desired = await virtualMachine.desired(m(), ctx);
    expect(desired).toMatchObject({
      name: 'web',
      flavor: { name: `small-${ctx.owner}`, vcpus: 1, ram: 64, disk: 1 },
      image: 'base',
      networks: [{ uuid: t.ids.get('Network/app-net') }],
      fixed_ips: ['10.20.0.10'],
      security_groups: [t.ids.get('SecurityGroup/web')],
      key_name: `deploy-${ctx.owner}`,
      metadata: { role: 'web' },
      tags: ['tier-a', 'tier-b'],
      power_state: 'running',
      config_drive: true,
      availability_zone: 'nova',
    });
    expect(desired.user_data).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(desired).not.toHaveProperty('image_id');

    // Same name, even our owner tag, but no metadata marker: never ours.
    const lookAlike = await ctx.apis.compute.post<{ server: { id: string } }>('/servers', {
      server: { name: 'web', flavorRef: t.ids.get('Flavor/small'), imageRef: t.ids.get('Image/base'), networks: 'none', tags: [ownerTag(ctx.owner)] },
    });

    marker = { owner: ctx.owner, ref: 'VirtualMachine/web', specHash: specHash({ networks: desired.networks, key_name: desired.key_name }) };
    t.cloud.counters.reset();
    const created = await virtualMachine.create(ctx, m(), desired, marker);
    expect(t.cloud.counters.write).toBe(1);
    expect(virtualMachine.health!(created).state).toBe('progressing');
    id = created.id;

    const up = await ready(id, 'ACTIVE');
    const raw = await rawServer(id);
    expect(raw.tenant_id).toBe(ctx.projectId);
    expect(raw.tags).toEqual(expect.arrayContaining([ownerTag(ctx.owner), 'tier-a', 'tier-b']));
    expect(raw.metadata).toEqual({ role: 'web', kupenstack_image: 'base', ...markerMetadata(marker) });
    expect(raw.key_name).toBe(`deploy-${ctx.owner}`);
    expect(raw.description).toBe('web server');
    expect((raw.image as { id: string }).id).toBe(t.ids.get('Image/base'));
    expect(raw.addresses).toEqual({ 'app-net': [expect.objectContaining({ addr: '10.20.0.10' })] });
    const ports = await ctx.apis.network.get<{ ports: { security_groups: string[] }[] }>('/ports', { device_id: id });
    expect(ports.ports.map((p) => p.security_groups)).toEqual([[t.ids.get('SecurityGroup/web')]]);

    const observed = await virtualMachine.observe(ctx);
    expect(observed.map((r) => r.id)).toEqual([id]);
    // Import by filter sees every owner's servers.
    expect((await virtualMachine.find!(ctx, { name: 'web' })).map((r) => r.id).sort()).toEqual([id, lookAlike.server.id].sort());
    expect(await virtualMachine.find!(ctx, { name: 'we' })).toEqual([]);
    expect(observed[0]!.marker).toEqual(marker);
    expect(up.marker).toEqual(marker);

    // No drift: every field desired returns is observed with the same value,
    // except those Nova does not show back (judged by the spec hash).
    t.cloud.counters.reset();
    const again = await virtualMachine.desired(m(), ctx);
    const [remote] = await virtualMachine.observe(ctx);
    expect(Object.entries(again).length).toBeGreaterThan(0);
    for (const [k, v] of Object.entries(again)) {
      if (vmUnobservedFields.includes(k)) expect(remote!.fields, k).not.toHaveProperty(k);
      else expect(remote!.fields[k], k).toEqual(v);
    }
    expect(Object.keys(again).filter((k) => vmUnobservedFields.includes(k)).sort()).toEqual(['fixed_ips', 'user_data']);
    // A second apply changes nothing: no update field differs, and observing wrote nothing.
    expect(changes(again, remote!)).toEqual({});
    expect(t.cloud.counters.write).toBe(0);

    await deleteServer(lookAlike.server.id);
  });

  it('updates name, description, metadata, tags and security groups in place, keeping the marker', async () => {
    const { ctx } = t;
    const [before] = await virtualMachine.observe(ctx);
    const next = { ...spec, name: 'web-1', description: 'front', metadata: { role: 'front', zone: 'a' }, tags: ['tier-c'], securityGroupRefs: [{ name: 'web' }, { name: 'ssh' }] };
    const m2 = manifest('VirtualMachine', 'web', ctx.namespace, next);
    const diff = changes(await virtualMachine.desired(m2, ctx), before!);
    expect(Object.keys(diff).sort()).toEqual(['description', 'metadata', 'name', 'security_groups', 'tags']);
    await virtualMachine.update(ctx, before!, diff, m2);

    const [after] = await virtualMachine.observe(ctx);
    expect(after!.id).toBe(id);
    expect(after!.marker).toEqual(marker);
    expect(changes(await virtualMachine.desired(m2, ctx), after!)).toEqual({});
    const raw = await rawServer(id);
    expect(raw.name).toBe('web-1');
    expect(raw.metadata).toEqual({ role: 'front', zone: 'a', kupenstack_image: 'base', ...markerMetadata(marker) });
    expect([...(raw.tags as string[])].sort()).toEqual([ownerTag(ctx.owner), 'tier-c'].sort());

    // And back to the original manifest.
    await virtualMachine.update(ctx, after!, changes(await virtualMachine.desired(m(), ctx), after!), m());
    const [back] = await virtualMachine.observe(ctx);
    expect(changes(await virtualMachine.desired(m(), ctx), back!)).toEqual({});
  });

  it('follows the declared power state, through two-step transitions too', async () => {
    const { ctx } = t;
    for (const [powerState, status] of [
      ['shutoff', 'SHUTOFF'],
      ['running', 'ACTIVE'],
      ['paused', 'PAUSED'],
      ['shutoff', 'SHUTOFF'], // unpause, then stop
      ['suspended', 'SUSPENDED'], // start, then suspend
      ['running', 'ACTIVE'],
    ] as const) {
      const mp = manifest('VirtualMachine', 'web', ctx.namespace, { ...spec, powerState });
      const current = await ready(id);
      const diff = changes(await virtualMachine.desired(mp, ctx), current);
      expect(diff).toEqual({ power_state: powerState });
      await virtualMachine.update(ctx, current, diff, mp);
      const after = await ready(id, status);
      expect(after.fields.power_state).toBe(powerState);
    }
  });

  it('attaches and detaches data volumes', async () => {
    const { ctx } = t;
    const volumeId = t.ids.get('Volume/data')!;
    await until('volume available', async () => ((await ctx.apis.volume.get<{ volume: { status: string } }>(`/volumes/${volumeId}`)).volume.status === 'available' ? true : undefined));
    const withVolume = manifest('VirtualMachine', 'web', ctx.namespace, { ...spec, volumes: [{ volumeRef: { name: 'data' } }] });
    let current = await ready(id);
    expect(changes(await virtualMachine.desired(withVolume, ctx), current)).toEqual({ volumes: [volumeId] });
    await virtualMachine.update(ctx, current, { volumes: [volumeId] }, withVolume);
    await until('volume in-use', async () => ((await ctx.apis.volume.get<{ volume: { status: string } }>(`/volumes/${volumeId}`)).volume.status === 'in-use' ? true : undefined));
    current = await ready(id);
    expect(current.fields.volumes).toEqual([volumeId]);

    const without = manifest('VirtualMachine', 'web', ctx.namespace, { ...spec, volumes: [] });
    expect(changes(await virtualMachine.desired(without, ctx), current)).toEqual({ volumes: [] });
    await virtualMachine.update(ctx, current, { volumes: [] }, without);
    await until('volume available again', async () => ((await ctx.apis.volume.get<{ volume: { status: string } }>(`/volumes/${volumeId}`)).volume.status === 'available' ? true : undefined));
    expect((await ready(id)).fields.volumes).toEqual([]);
  });

  it('reports a server in ERROR as failed, and heals it by hard reboot and by rebuild', async () => {
    const { ctx } = t;
    for (const step of ['reboot', 'rebuild'] as const) {
      await admin.post(`/servers/${id}/action`, { 'os-resetState': { state: 'error' } });
      const broken = (await virtualMachine.get!(ctx, id))!;
      expect(broken.status).toBe('ERROR');
      const health = virtualMachine.health!(broken);
      expect(health).toEqual({ state: 'failed', reason: expect.stringContaining('ERROR') as unknown });
      await virtualMachine.heal!(ctx, broken, step, m());
      const actions = await ctx.apis.compute.get<{ instanceActions: { action: string }[] }>(`/servers/${id}/os-instance-actions`);
      expect(actions.instanceActions[0]!.action).toBe(step);
      const healed = await ready(id, 'ACTIVE');
      expect(healed.fields.image_id).toBe(t.ids.get('Image/base'));
      expect(healed.marker).toEqual(marker);
      expect(changes(await virtualMachine.desired(m(), ctx), healed)).toEqual({});
    }
  });

  it('tells apart converging, ready and failed servers', () => {
    const health = (raw: Record<string, unknown>): string => virtualMachine.health!({ id: 'x', fields: {}, raw: { id: 'x', name: 'x', ...raw } }).state;
    expect(health({ status: 'BUILD', 'OS-EXT-STS:task_state': 'spawning' })).toBe('progressing');
    expect(health({ status: 'ACTIVE', 'OS-EXT-STS:task_state': 'powering-off', 'OS-EXT-STS:power_state': 1 })).toBe('progressing');
    expect(health({ status: 'SHUTOFF', 'OS-EXT-STS:task_state': null, 'OS-EXT-STS:power_state': 4 })).toBe('ready');
    // A compute host that forgot its guests: Nova says ACTIVE, nothing runs.
    expect(health({ status: 'ACTIVE', 'OS-EXT-STS:task_state': null, 'OS-EXT-STS:power_state': 0 })).toBe('failed');
    expect(health({ status: 'VERIFY_RESIZE', 'OS-EXT-STS:task_state': null, updated: new Date().toISOString() })).toBe('progressing');
    expect(health({ status: 'VERIFY_RESIZE', 'OS-EXT-STS:task_state': null, updated: '2020-01-01T00:00:00Z' })).toBe('failed');
    expect(health({ status: 'ERROR', fault: { message: 'No valid host was found.' } })).toBe('failed');
    expect(virtualMachine.health!({ id: 'x', fields: {}, raw: { id: 'x', status: 'ERROR', fault: { message: 'No valid host was found.' } } })).toEqual({ state: 'failed', reason: 'server is in ERROR: No valid host was found.' });
  });

  it('resizes in place when the flavor changes', async () => {
    const { ctx } = t;
    const bigger = manifest('VirtualMachine', 'web', ctx.namespace, { ...spec, flavorRef: { name: 'big' } });
    const current = await ready(id, 'ACTIVE');
    const diff = changes(await virtualMachine.desired(bigger, ctx), current);
    expect(diff).toEqual({ flavor: { name: `big-${ctx.owner}`, vcpus: 1, ram: 128, disk: 1, ephemeral: 0, swap: 0 } });
    await virtualMachine.update(ctx, current, diff, bigger);
    // update waits for the resize and confirms it: the server is already settled.
    const raw = await rawServer(id);
    expect(raw.status).toBe('ACTIVE');
    expect((raw.flavor as { original_name: string }).original_name).toBe(`big-${ctx.owner}`);
    expect(changes(await virtualMachine.desired(bigger, ctx), await ready(id, 'ACTIVE'))).toEqual({});
    spec.flavorRef = { name: 'big' };
  });

  it('rebuilds for another Image manifest, and for a new version of the same one only with onImageUpdate: rebuild', async () => {
    const { ctx, ids } = t;
    const other = manifest('VirtualMachine', 'web', ctx.namespace, { ...spec, imageRef: { name: 'other' } });
    let current = await ready(id, 'ACTIVE');
    let diff = changes(await virtualMachine.desired(other, ctx), current);
    expect(diff).toEqual({ image: 'other' });
    await virtualMachine.update(ctx, current, diff, other);
    current = await ready(id, 'ACTIVE');
    expect(current.fields.image_id).toBe(ids.get('Image/other'));
    expect(current.fields.image).toBe('other');
    expect(current.marker).toEqual(marker);

    // The Image manifest "other" now resolves to a new Glance image (an OCI tag moved).
    const previous = ids.get('Image/other')!;
    ids.set('Image/other', await image('other-v2'));
    expect(changes(await virtualMachine.desired(other, ctx), current)).toEqual({});
    const follow = manifest('VirtualMachine', 'web', ctx.namespace, { ...spec, imageRef: { name: 'other' }, onImageUpdate: 'rebuild' });
    diff = changes(await virtualMachine.desired(follow, ctx), current);
    expect(diff).toEqual({ image_id: ids.get('Image/other') });
    expect(current.fields.image_id).toBe(previous);
    await virtualMachine.update(ctx, current, diff, follow);
    current = await ready(id, 'ACTIVE');
    expect(current.fields.image_id).toBe(ids.get('Image/other'));
    expect(changes(await virtualMachine.desired(follow, ctx), current)).toEqual({});
  });

  it('deletes, and deleting again is fine', async () => {
    const { ctx } = t;
    const [remote] = await virtualMachine.observe(ctx);
    await virtualMachine.delete(ctx, remote!);
    await virtualMachine.delete(ctx, remote!);
    await until('server gone', async () => ((await virtualMachine.get!(ctx, id)) ? undefined : true));
    expect(await virtualMachine.observe(ctx)).toEqual([]);
  });
});
