import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driveCloud, type DriveOptions } from '../../../agent/cloud/drive.ts';
import { planCloud } from '../../../agent/cloud/plan.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import type { OpenStackCloudSpec } from '../../../agent/model/kinds.generated.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * The cloud driven as the agent drives it (driveCloud/planCloud on the test bed's API server,
 * real KCM and scheduler, kwok pods): a fresh install is Ready with every service ready in
 * status and no Helm release Secret; a second plan (server-side-apply dry run) is empty; a
 * hand-edited Deployment image shows in the next plan and the next apply corrects it; a
 * disabled chart is pruned from the agent's own inventory.
 */
const ns = 'cloud-drive';
const work = mkdtempSync(join(tmpdir(), 'ks-cloud-drive-'));
const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const opts: DriveOptions = { kubeConfig: kc, cloud: 'cloud-drive', namespace: ns, baseDir: work, helm: charts.helm, pollMs: 300, stepDeadlineMs: 240_000 };
const spec: OpenStackCloudSpec = { release: '2025.1', chart: { repository: charts.repository } };

beforeAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=true', '--ignore-not-found']);
});

afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

describe('driving an OpenStackCloud', () => {
  it('installs to Ready, plans nothing more, shows and corrects a hand-edited image, prunes a disabled chart', async () => {
    const log: string[] = [];
    const first = await planCloud(spec, opts);
    expect(first.changes.length).toBeGreaterThan(50);
    expect(first.changes.every((c) => c.action === 'create')).toBe(true);

    const installed = await driveCloud(spec, { ...opts, log: (l) => log.push(l) });
    expect(installed.failure, log.join('\n')).toBeUndefined();
    expect(installed.ready).toBe(true);
    expect(installed.status.release).toBe('2025.1');
    expect(installed.status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const services = Object.entries(installed.status.services ?? {});
    expect(services.map(([name]) => name).sort()).toEqual(['cinder', 'glance', 'horizon', 'keystone', 'mariadb', 'memcached', 'neutron', 'nova', 'placement', 'rabbitmq']);
    for (const [name, s] of services) expect(s.ready, name).toBe(true);
    const secrets = JSON.parse(await kubectlOk(['-n', ns, 'get', 'secrets', '-o', 'json'])) as { items: { metadata: { name: string } }[] };
    expect(secrets.items.length).toBeGreaterThan(0);
    expect(secrets.items.filter((s) => s.metadata.name.startsWith('sh.helm.release'))).toEqual([]);

    const second = await planCloud(spec, opts);
    expect(second.changes).toEqual([]);

    const container = await kubectlOk(['-n', ns, 'get', 'deployment/keystone-api', '-o', 'jsonpath={.spec.template.spec.containers[0].name}']);
    await kubectlOk(['-n', ns, 'set', 'image', 'deployment/keystone-api', `${container}=quay.io/airshipit/keystone:hand-edited`]);
    const drifted = await planCloud(spec, opts);
    expect(drifted.changes.map((c) => `${c.action} ${c.kind}/${c.name}`)).toEqual(['update Deployment/keystone-api']);
    const images = drifted.changes[0]!.images ?? [];
    expect(images.map((i) => [i.container, i.from])).toEqual([[container, 'quay.io/airshipit/keystone:hand-edited']]);
    expect(images[0]!.to).toMatch(/keystone:2025\.1/);
    const healed = await driveCloud(spec, opts);
    expect(healed.ready).toBe(true);
    const image = await kubectlOk(['-n', ns, 'get', 'deployment/keystone-api', '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
    expect(image).toBe(drifted.changes[0]!.images![0]!.to);
    expect((await planCloud(spec, opts)).changes).toEqual([]);

    const withoutHorizon: OpenStackCloudSpec = { ...spec, services: { horizon: { enabled: false } } };
    const planned = await planCloud(withoutHorizon, opts);
    expect(planned.changes.length).toBeGreaterThan(0);
    expect(planned.changes.every((c) => c.action === 'delete')).toBe(true);
    const pruned = await driveCloud(withoutHorizon, opts);
    expect(pruned.ready).toBe(true);
    expect(pruned.pruned).toContain('Deployment/horizon-server');
    expect((await kubectl(['-n', ns, 'get', 'deployment/horizon-server'])).code).not.toBe(0);
    expect((await planCloud(withoutHorizon, opts)).changes).toEqual([]);
  }, 900_000);
});
