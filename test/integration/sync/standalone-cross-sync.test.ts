import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SyncStatus } from '../../../agent/sync/status.ts';
import { AgentProcess, head, networksIn, subnetsIn } from '../../support/agent-harness.ts';

/*
 * Issue 48 part 3, standalone: `kupenstack agent` with two Syncs of directory sources against the
 * real OpenStack. `apps` (dependsOn `infra`) declares a Subnet whose networkRef names the Network
 * `base` that `infra` declares in the same namespace: `apps` waits for `infra`, then applies, the
 * subnet on that network in Neutron, in the project `infra` made (borrowed, not made twice). A third
 * Sync whose Subnet names a network no dependency declares is rejected with the file and line, naming
 * the dependency. A revision of `infra` that drops `base` while `apps` references it is held: the
 * network stays in Neutron; once `apps` drops its reference, `infra`'s revision applies.
 */
const agent = new AgentProcess();
const ns = 'xsync';
const project = `${agent.owner}-${ns}`;
const dirs = { infra: join(agent.dir, 'infra'), apps: join(agent.dir, 'apps'), stray: join(agent.dir, 'stray') };
const network = (name: string): string => `${head('Network', name, ns)}  mtu: 1400\n`;
const subnet = (name: string, net: string, cidr: string): string => `${head('Subnet', name, ns)}  networkRef: {name: ${net}}\n  cidr: ${cidr}\n`;
const ready = (s: SyncStatus): { status: string; reason: string; message: string } | undefined => s.conditions.find((c) => c.type === 'Ready');

afterAll(async () => {
  // Apps first: its subnet holds infra's network.
  rmSync(join(dirs.apps, 'subnet.yaml'), { force: true });
  rmSync(join(dirs.stray, 'subnet.yaml'), { force: true });
  await agent.dispose(['apps', 'stray', 'infra']);
});

describe('standalone agent: references across Syncs (dependsOn)', () => {
  it('apps waits for infra, then its Subnet lands on the Network infra declared, in the project infra made', async () => {
    for (const d of Object.values(dirs)) mkdirSync(join(d, ns), { recursive: true });
    writeFileSync(join(dirs.infra, ns, 'base.yaml'), network('base'));
    writeFileSync(join(dirs.apps, ns, 'subnet.yaml'), subnet('apps-subnet', 'base', '10.48.1.0/24'));
    writeFileSync(join(dirs.stray, ns, 'subnet.yaml'), subnet('stray-subnet', 'nowhere', '10.48.2.0/24'));
    const sync = (name: keyof typeof dirs, dependsOn: string[]): Record<string, unknown> => ({
      name,
      source: { directory: { path: dirs[name] } },
      interval: '3s',
      retryInterval: '2s',
      ...(dependsOn.length > 0 ? { dependsOn: dependsOn.map((d) => ({ name: d })) } : {}),
    });
    agent.configure([sync('infra', []), sync('apps', ['infra']), sync('stray', ['infra'])]);
    await agent.start();
    await agent.waitFor('infra', 'infra applied', (s) => ready(s)?.status === 'True');
    const apps = await agent.waitFor('apps', 'apps applied', (s) => ready(s)?.status === 'True');
    expect(apps.lastAppliedRevision).toBeDefined();
    const [base] = (await networksIn(project)).filter((n) => n.name === 'base');
    expect(base).toBeDefined();
    expect((await subnetsIn(project)).map((s) => [s.name, s.network_id])).toEqual([['apps-subnet', base!.id]]);
  }, 300_000);

  it('a reference no dependency declares rejects the revision with the file and line, naming the dependency', async () => {
    const s = await agent.waitFor('stray', 'stray rejected', (x) => ready(x)?.reason === 'ValidationFailed');
    expect(ready(s)?.message).toMatch(/xsync\/subnet\.yaml:\d+/);
    expect(ready(s)?.message).toContain('infra');
    expect((await subnetsIn(project)).map((x) => x.name)).not.toContain('stray-subnet');
  }, 120_000);

  it("infra's revision that drops base while apps references it is held; it applies once apps drops the reference", async () => {
    const [base] = (await networksIn(project)).filter((n) => n.name === 'base');
    rmSync(join(dirs.infra, ns, 'base.yaml'));
    writeFileSync(join(dirs.infra, ns, 'other.yaml'), network('other'));
    const held = await agent.waitFor('infra', 'infra held', (s) => ready(s)?.status === 'False' && /still referenced by Sync "apps"/.test(ready(s)?.message ?? ''));
    expect(ready(held)?.message).toContain('Subnet xsync/apps-subnet spec.networkRef');
    expect((await networksIn(project)).map((n) => n.id)).toContain(base!.id);
    rmSync(join(dirs.apps, ns, 'subnet.yaml'));
    writeFileSync(join(dirs.apps, ns, 'keep.yaml'), `${head('SecurityGroup', 'apps-sg', ns)}  description: apps\n`);
    await agent.waitFor('apps', 'apps without its subnet', (s) => ready(s)?.status === 'True' && s.lastAppliedRevision !== undefined);
    await agent.waitFor('infra', 'infra applied', (s) => ready(s)?.status === 'True', 120_000);
    const names = (await networksIn(project)).map((n) => n.name).sort();
    expect(names).toEqual(['other']);
  }, 300_000);
});
