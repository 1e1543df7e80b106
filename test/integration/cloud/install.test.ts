import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubernetesObjectApi, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySteps } from '../../../agent/cloud/apply.ts';
import { rolloutVerdict } from '../../../agent/cloud/gates.ts';
import { describeStep, installSteps } from '../../../agent/cloud/phases.ts';
import { renderCloud } from '../../../agent/cloud/render-cloud.ts';
import { newRolloutMemory } from '../../../agent/cloud/rollout.ts';
import { generateSecrets } from '../../../agent/cloud/secrets.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { charts } from '../../testbed/charts/peer.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * A fresh install of the test charts from an OpenStackCloud on the test bed's API server
 * (real KCM and scheduler, kwok pods): the order in which the API server saw workloads
 * appear and become ready respects the install groups and the hook phases; every gate
 * passes; a second apply changes nothing (no resourceVersion moves, no Job is rerun). First, in
 * requeue mode (the controller's), the same steps stop at the first gate not met yet and say so (a Progress).
 */
// One namespace per run: two runs at once (a clean clone beside a worktree) must not share it.
const ns = `cloud-install-${process.pid.toString(36)}`;
const work = mkdtempSync(join(tmpdir(), 'ks-cloud-install-'));
const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });

interface Seen { seq: number; kind: string; name: string; event: 'added' | 'ready' }
const seen: Seen[] = [];
const aborts: (() => void)[] = [];

beforeAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=true', '--ignore-not-found']);
  await kubectlOk(['create', 'namespace', ns]);
  let seq = 0;
  const ready = new Set<string>();
  for (const [path, kind] of [['/apis/batch/v1', 'Job'], ['/apis/apps/v1', 'Deployment'], ['/apis/apps/v1', 'StatefulSet'], ['/apis/apps/v1', 'DaemonSet']] as const) {
    const plural = `${kind.toLowerCase()}s`;
    let resourceVersion: string | undefined;
    let stopped = false;
    // client-node ends a watch after a timeout: resume it from the last resourceVersion seen,
    // so no event is lost or repeated. One configuration (one HTTP agent) per watch.
    const start = async (): Promise<void> => {
      const req = await new Watch(loadKubeConfig({ kubeconfig: kube.kubeconfig })).watch(`${path}/namespaces/${ns}/${plural}`, resourceVersion ? { resourceVersion } : {}, (type: string, obj: KubernetesObject) => {
        resourceVersion = obj.metadata!.resourceVersion;
        const name = obj.metadata!.name!;
        if (type === 'ADDED') seen.push({ seq: seq++, kind, name, event: 'added' });
        const key = `${kind}/${name}/${obj.metadata!.uid}`;
        if (!ready.has(key) && rolloutVerdict(obj).state === 'ready') {
          ready.add(key);
          seen.push({ seq: seq++, kind, name, event: 'ready' });
        }
      }, () => {
        if (!stopped) void start();
      });
      aborts.push(() => {
        stopped = true;
        req.abort();
      });
    };
    await start();
  }
});

afterAll(async () => {
  for (const a of aborts) a();
  rmSync(work, { recursive: true, force: true });
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

const at = (kind: string, name: string, event: Seen['event']): number => {
  const s = seen.find((x) => x.kind === kind && x.name === name && x.event === event);
  if (!s) throw new Error(`the API server never showed ${kind}/${name} ${event}; seen: ${seen.map((x) => `${x.kind}/${x.name}:${x.event}`).join(' ')}`);
  return s.seq;
};

const secrets = generateSecrets((n) => Buffer.alloc(n, 7));
const render = () => renderCloud({ spec: { release: '2025.1', chart: { repository: charts.repository } }, namespace: ns, secrets, helm: charts.helm, workDir: mkdtempSync(join(work, 'r-')), baseDir: work, kubeVersion: kube.version });

describe('a fresh install of the test cloud', () => {
  it('in requeue mode looks once at the first gate not met and returns a Progress: no worker waits, no later step is applied', async () => {
    const steps = installSteps(await render());
    const progress = newRolloutMemory();
    const log: string[] = [];
    // The deadline is far: a gate that waited instead of returning would go on through the whole install.
    const opts = { kubeConfig: kc, namespace: ns, cloud: 'cloud-install', pollMs: 300, stepDeadlineMs: 240_000, requeue: true, rollout: progress, log: (l: string) => log.push(l) };
    const result = await applySteps(steps, opts);
    expect(result.failure, log.join('\n')).toBeUndefined();
    const err = result.waiting;
    expect(err, log.join('\n')).toBeDefined();
    const stop = steps.findIndex((s) => !progress.done.has(describeStep(s)));
    // A step with a gate (hooks wait for their Jobs): -1 (every step done) has none.
    expect(['gate', 'hooks'], 'the kind of the step it stopped at').toContain(steps[stop]?.kind);
    const label = describeStep(steps[stop]!).split(' ').slice(0, 2).join(' ');
    expect(err!.reason).toMatch(new RegExp(`^step ${label.replace(/[[\]]/g, '\\$&')}: `));
    expect([...progress.gateSince.keys()]).toEqual([label]);
    // Nothing after that step reached the API server (read from it, not from what applySteps says).
    // A later gate names objects an earlier step applied (keystone-api: applied by 1:apply, gated by 1:gate): only what no step up to the stop applies counts.
    const key = (o: { kind: string; name: string }): string => `${o.kind}/${o.name}`;
    const applied = new Set(steps.slice(0, stop + 1).flatMap((s) => s.objects).map(key));
    const later = steps.slice(stop + 1).flatMap((s) => s.objects).filter((o) => ['Job', 'Deployment', 'StatefulSet', 'DaemonSet'].includes(o.kind) && !applied.has(key(o)));
    expect(later.length).toBeGreaterThan(10);
    const api = KubernetesObjectApi.makeApiClient(kc);
    const present: string[] = [];
    for (const o of later) {
      const found = await api.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace: ns } }).then(() => true, () => false);
      if (found) present.push(`${o.kind}/${o.name}`);
    }
    expect(present).toEqual([]);
  }, 120_000);

  it('comes up group by group, hooks by weight before each gate, and a second apply changes nothing', async () => {
    const steps = installSteps(await render());
    const log: string[] = [];
    const result = await applySteps(steps, { kubeConfig: kc, namespace: ns, cloud: 'cloud-install', pollMs: 300, stepDeadlineMs: 240_000, log: (l) => log.push(l) });
    expect(result.failure, log.join('\n')).toBeUndefined();
    expect(result.done).toHaveLength(steps.length);

    // Groups: nothing of a group appears before every workload of the groups before it is ready.
    const groups: [string, string][][] = [
      [['StatefulSet', 'mariadb-server'], ['StatefulSet', 'rabbitmq'], ['StatefulSet', 'memcached']],
      [['Deployment', 'keystone-api'], ['Job', 'keystone-db-sync']],
      [['Deployment', 'glance-api'], ['Deployment', 'placement-api'], ['Deployment', 'cinder-api'], ['Deployment', 'horizon-server'], ['Job', 'glance-db-sync']],
      [['Deployment', 'nova-api'], ['DaemonSet', 'nova-compute'], ['Deployment', 'neutron-server'], ['DaemonSet', 'neutron-l3-agent'], ['Job', 'nova-cell-setup']],
    ];
    // honest: groups is the literal above (three groups): the loop compares each with the one before
    for (let g = 1; g < groups.length; g++) {
      const firstAdded = Math.min(...groups[g]!.map(([k, n]) => at(k, n, 'added')));
      const previous = groups[g - 1]!;
      expect(previous.length).toBeGreaterThan(0);
      for (const [k, n] of previous) expect(at(k, n, 'ready'), `${k}/${n} ready before group ${g} starts`).toBeLessThan(firstAdded);
    }
    // Hook phases inside a chart: each weight starts after the previous one completed.
    expect(at('Job', 'keystone-db-init', 'ready')).toBeLessThan(at('Job', 'keystone-db-sync', 'added'));
    expect(at('Job', 'keystone-db-sync', 'ready')).toBeLessThan(at('Job', 'keystone-bootstrap', 'added'));
    expect(at('Job', 'glance-ks-service', 'ready')).toBeLessThan(at('Job', 'glance-ks-endpoints', 'added'));
    expect(at('Job', 'nova-rabbit-init', 'ready')).toBeLessThan(at('Job', 'nova-ks-service', 'added'));
    // The workloads of a chart are applied before its hooks and gated after them.
    expect(at('Deployment', 'keystone-api', 'added')).toBeLessThan(at('Job', 'keystone-db-init', 'added'));

    // Helm left nothing behind: no release Secrets; every object carries the agent's field manager.
    const secretsJson = JSON.parse(await kubectlOk(['-n', ns, 'get', 'secrets', '-o', 'json'])) as { items: KubernetesObject[] };
    expect(secretsJson.items.length).toBeGreaterThan(0);
    expect(secretsJson.items.filter((s) => s.metadata!.name!.startsWith('sh.helm.release'))).toEqual([]);

    // A second apply of a second render: nothing moves.
    const api = KubernetesObjectApi.makeApiClient(kc);
    const versions = async () => {
      const out: Record<string, string> = {};
      for (const s of steps) for (const o of s.objects) {
        const live = await api.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace: ns } });
        out[`${o.kind}/${o.name}`] = `${live.metadata!.uid}@${live.metadata!.resourceVersion}`;
      }
      return out;
    };
    const before = await versions();
    expect(Object.keys(before).length).toBeGreaterThan(50);
    const again = await applySteps(installSteps(await render()), { kubeConfig: kc, namespace: ns, cloud: 'cloud-install', pollMs: 300, stepDeadlineMs: 60_000 });
    expect(again.failure).toBeUndefined();
    const after = await versions();
    expect(Object.entries(after).filter(([k, v]) => before[k] !== v)).toEqual([]);
  }, 600_000);
});
