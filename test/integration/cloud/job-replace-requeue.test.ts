import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySteps, TEMPLATE_HASH } from '../../../agent/cloud/apply.ts';
import type { Step } from '../../../agent/cloud/phases.ts';
import type { RenderedObject } from '../../../agent/cloud/render.ts';
import { newRolloutMemory } from '../../../agent/cloud/rollout.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * A Job whose template changed is replaced: deleted (Foreground), then created again. In requeue
 * mode (the controller's) a delete that has not finished yet — the Job's pods still going, here a
 * finalizer holding it on the test bed's API server — is "look again later" (a Progress), never the
 * step's failure: seen on the real node, where an upgrade stopped at glance-db-init with "Job
 * glance-db-init is being replaced" as its failure.
 */
const ns = `job-replace-${process.pid.toString(36)}`;
const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const hold = 'kupenstack.test/hold';

const job = (command: string): Record<string, unknown> => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'db-sync' },
  // Suspended: no pod is ever made (the test is about the Job object, not its pods).
  spec: { suspend: true, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'db-sync', image: 'example.invalid/db-sync:1', command: [command] }] } } },
});
const rendered = (command: string): RenderedObject => ({ chart: 'glance', apiVersion: 'batch/v1', kind: 'Job', name: 'db-sync', phase: { kind: 'hook', when: 'post', weight: -4 }, object: job(command) });
const step = (o: RenderedObject): Step => ({ kind: 'hooks', group: 0, charts: ['glance'], weight: -4, when: 'post', objects: [o] });
const uid = async (): Promise<string> => (JSON.parse(await kubectlOk(['-n', ns, 'get', 'job', 'db-sync', '-o', 'json'])) as { metadata: { uid: string } }).metadata.uid;

beforeAll(async () => {
  await kubectlOk(['create', 'namespace', ns]);
  // The live Job: an older template (another hash), held by a finalizer once deleted.
  const live = job('/old.sh');
  live.metadata = { name: 'db-sync', namespace: ns, finalizers: [hold], annotations: { [TEMPLATE_HASH]: 'an-older-template' } };
  await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(live) });
});

afterAll(async () => {
  await kubectl(['-n', ns, 'patch', 'job', 'db-sync', '--type', 'json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
});

describe('a Job replaced in requeue mode', () => {
  it('is looked at again while its delete is held (a Progress, not a failure), and created anew once the old one is gone', async () => {
    const before = await uid();
    const opts = { kubeConfig: kc, namespace: ns, cloud: 'job-replace', pollMs: 300, requeue: true, rollout: newRolloutMemory() };
    const first = await applySteps([step(rendered('/new.sh'))], opts);
    expect(first.failure).toBeUndefined();
    expect(first.waiting).toBeDefined();
    expect(first.waiting!.reason).toBe('Job db-sync is being replaced (its template changed)');
    // Asked to go (Foreground), still there: the finalizer holds it.
    const held = JSON.parse(await kubectlOk(['-n', ns, 'get', 'job', 'db-sync', '-o', 'json'])) as { metadata: { uid: string; deletionTimestamp?: string } };
    expect(held.metadata.uid).toBe(before);
    expect(held.metadata.deletionTimestamp).toBeTruthy();

    await kubectlOk(['-n', ns, 'patch', 'job', 'db-sync', '--type', 'json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
    let again = first;
    for (let i = 0; i < 60; i++) {
      again = await applySteps([step(rendered('/new.sh'))], opts);
      if (!again.waiting || !again.waiting.reason.includes('being replaced')) break;
      await new Promise((r) => setTimeout(r, 1_000));
    }
    // The new Job exists (another uid, the new command); its gate waits for it to complete: a Progress again, from the gate.
    expect(again.failure).toBeUndefined();
    expect(again.waiting).toBeDefined();
    expect(again.waiting!.reason).toMatch(/^step 0:post-hooks -4: Job\/db-sync: /);
    expect(await uid()).not.toBe(before);
    expect(await kubectlOk(['-n', ns, 'get', 'job', 'db-sync', '-o', 'jsonpath={.spec.template.spec.containers[0].command[0]}'])).toBe('/new.sh');
  }, 120_000);
});
