import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChartError } from '../../../agent/cloud/errors.ts';
import { renderCloud, type RenderedChart } from '../../../agent/cloud/render-cloud.ts';
import type { RenderedObject } from '../../../agent/cloud/render.ts';
import { generateSecrets } from '../../../agent/cloud/secrets.ts';
import type { OpenStackCloudSpec } from '../../../agent/model/kinds.generated.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { kube } from '../../testbed/kubernetes/peer.ts';

/**
 * The test charts (test/charts, shaped like OpenStack-Helm) fetched the three ways a cloud
 * names them — a Helm repository, an OCI registry, a folder — and rendered with the test
 * bed's pinned helm from an OpenStackCloud spec.
 */
const work = mkdtempSync(join(tmpdir(), 'ks-cloud-render-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// Deterministic secrets: the same bytes every run (a counter, not randomness).
const fixedSecrets = (seed: number) => {
  let n = seed;
  return generateSecrets((size) => Buffer.alloc(size, n++ % 251));
};
const secrets = fixedSecrets(1);
let run = 0;

async function render(spec: OpenStackCloudSpec, s = secrets): Promise<RenderedChart[]> {
  return renderCloud({ spec, namespace: 'cloud-render', secrets: s, helm: charts.helm, workDir: join(work, String(run++)), baseDir: work, kubeVersion: kube.version });
}

const find = (rendered: RenderedChart[], chart: string, kind: string, name: string): RenderedObject => {
  const o = rendered.find((c) => c.chart === chart)?.objects.find((x) => x.kind === kind && x.name === name);
  if (!o) throw new Error(`${chart}: no ${kind}/${name} rendered`);
  return o;
};
type PodSpec = { containers: { image: string }[]; initContainers?: { image: string }[] };
const podOf = (o: RenderedObject): { spec: PodSpec; metadata: { annotations?: Record<string, string> } } => (o.object.spec as { template: { spec: PodSpec; metadata: { annotations?: Record<string, string> } } }).template;
const images = (o: RenderedObject): string[] => podOf(o).spec.containers.map((c) => c.image);
const base: OpenStackCloudSpec = { release: '2025.1', chart: { repository: charts.repository } };
const ALL = ['mariadb', 'rabbitmq', 'memcached', 'keystone', 'glance', 'placement', 'cinder', 'horizon', 'nova', 'neutron'];

describe('the test charts rendered from an OpenStackCloud', () => {
  it('the Helm repository, the OCI registry and a folder give the same objects', async () => {
    const fromRepo = await render(base);
    const fromOci = await render({ ...base, chart: { repository: charts.oci, insecure: true } });
    const fromPath = await render({ ...base, chart: { path: charts.path } });
    expect(fromRepo.map((c) => c.chart)).toEqual(ALL);
    const objects = (r: RenderedChart[]) => r.map((c) => [c.chart, c.version, c.objects]);
    expect(objects(fromOci)).toEqual(objects(fromRepo));
    expect(objects(fromPath)).toEqual(objects(fromRepo));
    // Digests: the package's sha256 from the repository, the manifest's from the registry.
    expect(fromRepo.every((c) => /^sha256:[a-f0-9]{64}$/.test(c.digest ?? ''))).toBe(true);
    expect(fromOci.every((c) => /^sha256:[a-f0-9]{64}$/.test(c.digest ?? ''))).toBe(true);
    expect(fromPath.map((c) => c.digest)).toEqual(ALL.map(() => undefined));
  });

  it('a second render is identical: the charts\' random secret key is pinned', async () => {
    const [a, b] = [await render(base), await render(base)];
    expect(JSON.stringify(b.map((c) => c.objects))).toBe(JSON.stringify(a.map((c) => c.objects)));
    // The trap is real: helm alone draws a new memcache_secret_key on every render.
    const raw = () => execFileSync(charts.helm, ['template', 'nova', join(charts.path, 'nova'), '--skip-tests'], { encoding: 'utf8' });
    expect(raw()).not.toBe(raw());
    // …and the pinned key is the cloud's: other secrets, another etc Secret and hash annotation.
    const other = await render(base, fixedSecrets(99));
    expect(find(other, 'nova', 'Secret', 'nova-etc').object).not.toEqual(find(a, 'nova', 'Secret', 'nova-etc').object);
    expect(podOf(find(other, 'nova', 'Deployment', 'nova-api')).metadata.annotations!['configmap-etc-hash']).not.toBe(podOf(find(a, 'nova', 'Deployment', 'nova-api')).metadata.annotations!['configmap-etc-hash']);
  });

  it('the release picks the images; 2025.2 switches keystone to expand → migrate → contract', async () => {
    const r1 = await render(base);
    const r2 = await render({ ...base, release: '2025.2' });
    expect(images(find(r1, 'keystone', 'Deployment', 'keystone-api'))).toEqual(['quay.io/airshipit/keystone:2025.1-ubuntu_noble']);
    expect(images(find(r2, 'keystone', 'Deployment', 'keystone-api'))).toEqual(['quay.io/airshipit/keystone:2025.2-ubuntu_noble']);
    expect(images(find(r2, 'nova', 'DaemonSet', 'nova-compute'))).toEqual(['quay.io/airshipit/nova:2025.2-ubuntu_noble']);
    const jobs = (r: RenderedChart[]) => r.find((c) => c.chart === 'keystone')!.objects.filter((o) => o.kind === 'Job').map((o) => o.name).sort();
    expect(jobs(r1)).toEqual(['keystone-bootstrap', 'keystone-db-init', 'keystone-db-sync']);
    expect(jobs(r2)).toEqual(['keystone-bootstrap', 'keystone-db-init', 'keystone-db-sync-contract', 'keystone-db-sync-expand', 'keystone-db-sync-migrate']);
  });

  it('hooks become ordered phases without Helm annotations; tests are dropped; nova cell-setup is a plain Job', async () => {
    const r = await render(base);
    const dbSync = find(r, 'keystone', 'Job', 'keystone-db-sync');
    expect(dbSync.phase).toEqual({ kind: 'hook', when: 'post', weight: -4 });
    expect(find(r, 'glance', 'Job', 'glance-ks-user').phase).toEqual({ kind: 'hook', when: 'post', weight: -1 });
    expect(find(r, 'keystone', 'Job', 'keystone-bootstrap').phase).toEqual({ kind: 'hook', when: 'post', weight: 5 });
    expect(find(r, 'nova', 'Job', 'nova-cell-setup').phase).toEqual({ kind: 'main' });
    const all = r.flatMap((c) => c.objects);
    expect(all.length).toBeGreaterThan(50);
    expect(all.filter((o) => JSON.stringify(o.object.metadata).includes('helm.sh/hook'))).toEqual([]);
    expect(all.filter((o) => o.kind === 'Pod')).toEqual([]);
  });

  it('the spec sets replicas (size, then per service), conf, image pins and the registry override', async () => {
    const r = await render({
      ...base,
      size: 'medium',
      imageRegistry: 'mirror.example.com/osh',
      services: { nova: { replicas: 3, conf: { nova: { DEFAULT: { cpu_allocation_ratio: 4 } } } }, glance: { images: { glance_api: 'registry.example.com/glance:2025.1-fix1' } } },
    });
    expect((find(r, 'keystone', 'Deployment', 'keystone-api').object.spec as { replicas: number }).replicas).toBe(2);
    expect((find(r, 'nova', 'Deployment', 'nova-api').object.spec as { replicas: number }).replicas).toBe(3);
    expect(images(find(r, 'nova', 'Deployment', 'nova-api'))).toEqual(['mirror.example.com/osh/airshipit/nova:2025.1-ubuntu_noble']);
    // A pin is an exact image: the registry override rewrites it too (an air-gapped mirror).
    expect(images(find(r, 'glance', 'Deployment', 'glance-api'))).toEqual(['mirror.example.com/osh/glance:2025.1-fix1']);
    const conf = Buffer.from((find(r, 'nova', 'Secret', 'nova-etc').object.data as Record<string, string>)['nova.conf.yaml']!, 'base64').toString();
    expect(conf).toContain('cpu_allocation_ratio: 4');
  });

  it('the real dependency graph is rendered, nova ↔ neutron included', async () => {
    const r = await render(base);
    const deps = (o: RenderedObject) => JSON.parse(podOf(o).metadata.annotations!['kupenstack.test/deps']!) as { services: { service: string }[] };
    expect(deps(find(r, 'nova', 'DaemonSet', 'nova-compute')).services.map((s) => s.service)).toContain('network');
    expect(deps(find(r, 'neutron', 'DaemonSet', 'neutron-l3-agent')).services.map((s) => s.service)).toContain('compute');
  });

  it('a digest pin that does not match refuses the chart, naming it', async () => {
    const err = await render({ ...base, chart: { repository: charts.repository, digests: { glance: `sha256:${'0'.repeat(64)}` } } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChartError);
    expect((err as ChartError).code).toBe('chart.digest');
    expect((err as ChartError).message).toMatch(/^chart glance: glance 2025\.2\.0 in http:\/\/127\.0\.0\.1:8190\/charts\/index\.yaml has digest sha256:[a-f0-9]{64}, the spec pins sha256:0{64}/);
  });
});
