import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { textLine } from '../../agent/events/text-log.ts';
import { adapters } from '../../agent/kinds/registry.ts';
import { planBetweenRevisions } from '../../agent/plan/between-revisions.ts';
import { FileStateStore } from '../../agent/status/file-store.ts';
import { h, revisionMaker } from '../support/revisions.ts';

const revision = revisionMaker('ks-decide-');
const scratch = mkdtempSync(join(tmpdir(), 'ks-decide-state-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const net = `${h('Network', 'net')}  mtu: 1450\n`;
const sub = (cidr: string) => `${h('Subnet', 'sub')}  networkRef: {name: net}\n  cidr: ${cidr}\n`;
const router = `${h('Router', 'r')}  interfaces: [{subnetRef: {name: sub}}]\n`;
const port = `${h('Port', 'p')}  networkRef: {name: net}\n  fixedIPs: [{subnetRef: {name: sub}}]\n`;

describe('the planner: a replace cascades as explicit, destructive changes', () => {
  it('a subnet replaced under a router interface and a port: both are detached first and updated after, all flagged destructive', async () => {
    const { plan, errors } = await planBetweenRevisions(await revision([net, sub('10.1.0.0/24'), router, port]), await revision([net, sub('10.2.0.0/24'), router, port]), { adapters, prune: true, massDeleteThreshold: 0.5, allowMassDelete: false, baseLabel: 'base', headLabel: 'head' });
    expect(errors).toEqual([]);
    const by = new Map(plan.changes.map((c) => [c.address, c]));
    expect([...by.keys()].sort()).toEqual(['t/Port/p', 't/Router/r', 't/Subnet/sub']);
    expect(by.get('t/Subnet/sub')).toMatchObject({ action: 'replace', destructive: true });
    expect(by.get('t/Subnet/sub')!.reasons).toContainEqual({ code: 'dependents-deleted', message: 'replacing it detaches Port/p, Router/r first' });
    for (const a of ['t/Router/r', 't/Port/p']) expect(by.get(a)).toMatchObject({ action: 'update', destructive: true, detachFrom: ['t/Subnet/sub'] });
    expect(plan.summary.destructive).toBe(3);
  });

  it('a network replaced takes its subnet with it (immutable network_id), and what uses the subnet is detached', async () => {
    const provider = (seg: number) => `${h('Network', 'net')}  mtu: 1450\n  provider: {networkType: vlan, physicalNetwork: physnet1, segmentationId: ${seg}}\n`;
    const { plan } = await planBetweenRevisions(await revision([provider(100), sub('10.1.0.0/24'), router]), await revision([provider(101), sub('10.1.0.0/24'), router]), { adapters, prune: true, massDeleteThreshold: 0.5, allowMassDelete: false, baseLabel: 'base', headLabel: 'head' });
    expect(plan.changes.map((c) => `${c.action} ${c.address}`).sort()).toEqual(['replace t/Network/net', 'replace t/Subnet/sub', 'update t/Router/r']);
    expect(plan.changes.find((c) => c.address === 't/Network/net')!.reasons.map((r) => r.message)).toContain('replacing it replaces Subnet/sub with it');
    expect(plan.changes.find((c) => c.address === 't/Router/r')!.detachFrom).toEqual(['t/Subnet/sub']);
  });
});

describe('the planner: what a create does', () => {
  it('a VM created is not destructive and carries no resize or rebuild notes; changing its image later is', async () => {
    const vm = (image: string) => `${h('Flavor', 'tiny')}  vcpus: 1\n  ram: 64\n  disk: 1\n---\n${h('Image', image)}  diskFormat: raw\n  source: {url: {url: "http://127.0.0.1:9/${image}.raw"}}\n---\n${net}---\n${h('VirtualMachine', 'web')}  flavorRef: {name: tiny}\n  imageRef: {name: ${image}}\n  networks: [{networkRef: {name: net}}]\n`;
    const created = await planBetweenRevisions(await revision([net]), await revision([vm('a')]), { adapters, prune: true, massDeleteThreshold: 0.5, allowMassDelete: false, baseLabel: 'base', headLabel: 'head' });
    const web = created.plan.changes.find((c) => c.address === 't/VirtualMachine/web');
    expect(web).toMatchObject({ action: 'create', destructive: false, reasons: [] });
    expect(web!.note).toBeUndefined();
    expect(created.plan.summary.destructive).toBe(0);
    const rebuilt = await planBetweenRevisions(await revision([vm('a')]), await revision([vm('b')]), { adapters, prune: true, massDeleteThreshold: 0.5, allowMassDelete: false, baseLabel: 'base', headLabel: 'head' });
    expect(rebuilt.plan.changes.find((c) => c.address === 't/VirtualMachine/web')).toMatchObject({ destructive: true });
  });
});

describe('engine seams', () => {
  it('the text log sink prints the lines the CLI always printed', () => {
    const at = new Date().toISOString();
    const base = { reason: 'x', severity: 'normal' as const, at };
    expect(textLine({ ...base, type: 'created', address: 'a/Network/n', message: 'created Network 1' })).toBe('create  a/Network/n');
    expect(textLine({ ...base, type: 'updated', address: 'a/Network/n', message: 'mtu, tags' })).toBe('update  a/Network/n: mtu, tags');
    expect(textLine({ ...base, type: 'deleted', address: 'a/Network/n', message: '', id: 'i1' })).toBe('delete  a/Network/n (i1)');
    expect(textLine({ ...base, type: 'replaced', address: 'a/Subnet/s', message: '', id: 'i2' })).toBe('replace a/Subnet/s (deleting i2)');
    expect(textLine({ ...base, type: 'failed', address: 'a/Port/p', message: 'boom' })).toBe('error   a/Port/p: boom');
    expect(textLine({ ...base, type: 'held', address: 'rev', message: '3 deletions (mass-delete guard)' })).toBe('held    3 deletions (mass-delete guard)');
    expect(textLine({ ...base, type: 'drift-corrected', address: 'a/Port/p', message: 'x' })).toBeUndefined();
  });

  it('the file state store keeps today\'s file: resources, revisions, the last ten runs', async () => {
    const store = new FileStateStore(join(scratch, 'state'), 'owner1');
    expect(await store.load()).toEqual({ owner: 'owner1', resources: {}, history: [] });
    await store.putResource('a/Network/n', { id: 'i1', conditions: [{ type: 'Ready', status: 'True', reason: 'Reconciled', message: '', lastTransitionTime: 't' }] });
    await store.putResource('a/Network/gone', { id: 'i2' });
    await store.putResource('a/Network/gone', undefined);
    for (let i = 0; i < 12; i++) await store.finishRun({ revision: `r${i}`, startedAt: 't', durationMs: 1, result: i === 11 ? 'failed' : 'applied', counts: {} });
    const again = await new FileStateStore(join(scratch, 'state'), 'owner1').load();
    expect(Object.keys(again.resources)).toEqual(['a/Network/n']);
    expect(again.resources['a/Network/n']!.id).toBe('i1');
    expect([again.lastAppliedRevision, again.lastAttemptedRevision, again.history.length]).toEqual(['r10', 'r11', 10]);
  });
});
