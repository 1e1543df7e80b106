import { describe, expect, it } from 'vitest';
import { adapters } from '../../agent/kinds/registry.ts';
import { planBetweenRevisions } from '../../agent/plan/between-revisions.ts';
import type { Plan } from '../../agent/plan/plan.ts';
import { h, revisionMaker } from '../support/revisions.ts';

const revision = revisionMaker('ks-plan-rev-');

async function plan(base: string[], head: string[], prune = true, massDeleteThreshold = 0.5): Promise<Plan> {
  const { plan: p, errors } = await planBetweenRevisions(await revision(base), await revision(head), { adapters, prune, massDeleteThreshold, allowMassDelete: false, baseLabel: 'base', headLabel: 'head' });
  expect(errors).toEqual([]);
  return p;
}

const actions = (p: Plan): string[] => p.changes.map((c) => `${c.action} ${c.address}`).sort();

const net = (mtu = 1450) => `${h('Network', 'net')}  mtu: ${mtu}\n`;
const sub = (cidr = '10.1.0.0/24') => `${h('Subnet', 'sub')}  networkRef: {name: net}\n  cidr: ${cidr}\n`;
const port = `${h('Port', 'port')}  networkRef: {name: net}\n  fixedIPs: [{subnetRef: {name: sub}}]\n`;
const flavor = (name: string, vcpus: number) => `${h('Flavor', name)}  vcpus: ${vcpus}\n  ram: 512\n  disk: 1\n`;
const image = (name: string) => `${h('Image', name)}  diskFormat: raw\n  source:\n    url: {url: "https://images.example.com/${name}.raw"}\n`;
const vm = (flavorName: string, imageName: string, net = 'net') => `${h('VirtualMachine', 'vm')}  flavorRef: {name: ${flavorName}}\n  imageRef: {name: ${imageName}}\n  networks: [{networkRef: {name: ${net}}}]\n`;

describe('plan between revisions (no cloud)', () => {
  it('finds nothing to do between identical revisions', async () => {
    const docs = [net(), sub(), port, flavor('s', 1), image('one'), vm('s', 'one')];
    const p = await plan(docs, docs);
    expect(p.changes).toEqual([]);
    expect(p.summary).toEqual({ create: 0, update: 0, replace: 0, delete: 0, destructive: 0 });
  });

  it('replaces on an immutable field, and what references the replaced object follows it', async () => {
    const p = await plan([net(), sub(), port], [net(), sub('10.2.0.0/24'), port]);
    expect(actions(p)).toEqual(['replace t/Subnet/sub', 'update t/Port/port']);
    const portChange = p.changes.find((c) => c.address === 't/Port/port')!;
    expect(portChange.fields[0]).toMatchObject({ before: ['(id of Subnet/sub)'], after: ['(known after apply: Subnet/sub)'] });
  });

  it('a mutable field is an update in place', async () => {
    const p = await plan([`${h('Network', 'net')}  mtu: 1450\n  external: false\n`, sub()], [`${h('Network', 'net')}  mtu: 1450\n  external: false\n  shared: false\n`, sub()]);
    // shared is mutable: an update, nothing replaced
    expect(actions(p)).toEqual(['update t/Network/net']);
  });

  it('shows an image change as destructive and a flavor change as a resize', async () => {
    const base = [net(), flavor('s', 1), flavor('l', 2), image('one'), image('two'), vm('s', 'one')];
    const rebuilt = await plan(base, [...base.slice(0, 5), vm('s', 'two')]);
    expect(rebuilt.changes[0]).toMatchObject({ address: 't/VirtualMachine/vm', action: 'update', destructive: true });
    expect(rebuilt.changes[0]!.reasons.map((r) => r.code)).toContain('root-disk-lost');
    const resized = await plan(base, [...base.slice(0, 5), vm('l', 'one')]);
    expect(resized.changes[0]).toMatchObject({ action: 'update', destructive: false });
    expect(resized.changes[0]!.note).toMatch(/resize/);
  });

  it('deletes removed manifests only when pruning, holds a mass delete, leaves detached ones', async () => {
    const base = [net(), sub(), port, flavor('s', 1)];
    expect(actions(await plan(base, [net(), flavor('s', 1)]))).toEqual(['delete t/Port/port', 'delete t/Subnet/sub']);
    const kept = await plan(base, [net(), flavor('s', 1)], false);
    expect(kept.changes).toEqual([]);
    expect(kept.warnings.join()).toMatch(/2 manifests were removed/);
    const held = await plan(base, [flavor('s', 1)], true, 0.5);
    expect(held.changes).toEqual([]);
    expect(held.held.map((x) => x.address).sort()).toEqual(['t/Network/net', 't/Port/port', 't/Subnet/sub']);
    const detached = await plan([`${h('Network', 'keep')}  mtu: 1450\n  onDelete: detach\n`, net()], [net()]);
    expect(detached.changes).toEqual([]);
    expect(detached.warnings.join()).toMatch(/t\/Network\/keep: no longer declared and left in OpenStack/);
  });

  it('never reaches for a cloud: lookups by name answer placeholders', async () => {
    const byName = `${h('VirtualMachine', 'vm')}  flavorName: m1.small\n  imageRef: {name: one}\n  networks: [{networkRef: {name: net}}]\n`;
    const p = await plan([net(), image('one'), byName], [net(), image('one'), byName.replace('m1.small', 'm1.large')]);
    expect(p.changes[0]!.fields[0]).toEqual({ path: 'flavor', before: { name: 'm1.small' }, after: { name: 'm1.large' }, forcesReplacement: false });
  });

  it('a moved OCI tag is a new image version, and VMs that follow it are rebuilt (destructive)', async () => {
    const oci = (tag: string) => `${h('Image', 'os')}  source:\n    oci: {repository: registry.example.com/vm/os, tag: "${tag}", sharing: private}\n`;
    const follower = `${h('VirtualMachine', 'vm')}  flavorName: m1.small\n  imageRef: {name: os}\n  onImageUpdate: rebuild\n  networks: [{networkRef: {name: net}}]\n`;
    const p = await plan([net(), oci('1.0'), follower], [net(), oci('1.1'), follower]);
    expect(actions(p)).toEqual(['update t/Image/os', 'update t/VirtualMachine/vm']);
    expect(p.images).toEqual([{ address: 't/Image/os', reference: '(id of digest of registry.example.com/vm/os:1.1)', from: '(id of digest of registry.example.com/vm/os:1.0)', to: '(id of digest of registry.example.com/vm/os:1.1)' }]);
    const vmChange = p.changes.find((c) => c.address === 't/VirtualMachine/vm')!;
    expect(vmChange.destructive).toBe(true);
    expect(vmChange.reasons.map((r) => r.code)).toContain('root-disk-lost');
    const ignoring = follower.replace('rebuild', 'ignore');
    expect(actions(await plan([net(), oci('1.0'), ignoring], [net(), oci('1.1'), ignoring]))).toEqual(['update t/Image/os']);
  });
});
