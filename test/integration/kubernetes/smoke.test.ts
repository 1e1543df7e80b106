import { randomBytes } from 'node:crypto';
import { AppsV1Api, AuthenticationV1Api, BatchV1Api, CoreV1Api, VersionApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { isKubeStatus, kubeApiError } from '../../../agent/kube/errors.ts';
import { poll } from '../../../agent/util/poll.ts';
import { kube, tokenKubeconfig } from '../../testbed/kubernetes/peer.ts';

/** The Kubernetes peer of the test bed is a real control plane: scheduler, KCM, kwok nodes, service-account tokens. */

const kc = loadKubeConfig({ kubeconfig: kube.kubeconfig });
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const batch = kc.makeApiClient(BatchV1Api);
const ns = `ks-smoke-${randomBytes(3).toString('hex')}`;
const until = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000) =>
  poll(check, { timeoutMs, initialDelayMs: 200, maxDelayMs: 1_000, onTimeout: () => new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`) });

beforeAll(async () => {
  await core.createNamespace({ body: { metadata: { name: ns, labels: { 'kupenstack.io/test': 'smoke' } } } });
});
afterAll(async () => {
  // Not awaited to the end: namespace finalization takes ~10 s and nothing else uses the name.
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
});

describe('the Kubernetes peer', () => {
  it(`serves Kubernetes ${kube.version} over TLS verified with the test bed's CA`, async () => {
    const v = await kc.makeApiClient(VersionApi).getCode();
    expect(v.gitVersion).toBe(kube.version);
    expect(kc.getCurrentCluster()?.skipTLSVerify).toBeFalsy();
  });

  it('has a kwok node that is Ready', async () => {
    const node = await core.readNode({ name: kube.node });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it("runs a Deployment's pods: the real KCM makes them, the real scheduler binds them, kwok runs them", async () => {
    const labels = { app: 'web' };
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { replicas: 3, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] } } },
      },
    });
    const pods = await until('3 Running pods of deployment web', async () => {
      const list = await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=web' });
      return list.items.filter((p) => p.status?.phase === 'Running').length === 3 ? list.items : undefined;
    });
    for (const p of pods) expect(p.spec?.nodeName).toBe(kube.node);
    const d = await until('deployment web Available', async () => {
      const dep = await apps.readNamespacedDeployment({ name: 'web', namespace: ns });
      return dep.status?.availableReplicas === 3 ? dep : undefined;
    });
    expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
  });

  it('completes a Job (the real job controller sees its pod succeed)', async () => {
    await batch.createNamespacedJob({
      namespace: ns,
      body: { metadata: { name: 'once' }, spec: { backoffLimit: 0, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'once', image: 'registry.invalid/once:1' }] } } } },
    });
    const job = await until('job once Complete', async () => {
      const j = await batch.readNamespacedJob({ name: 'once', namespace: ns });
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') ? j : undefined;
    });
    expect(job.status?.succeeded).toBe(1);
  });

  it('issues ServiceAccount tokens (TokenRequest) that authenticate as the account, and RBAC then decides', async () => {
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'robot' } } });
    const tr = await core.createNamespacedServiceAccountToken({ name: 'robot', namespace: ns, body: { spec: { audiences: [], expirationSeconds: 600 } } });
    const token = tr.status?.token;
    expect(token).toMatch(/^ey/);
    const file = tokenKubeconfig(token!, ns);
    try {
      const asRobot = loadKubeConfig({ kubeconfig: file.path });
      const review = await asRobot.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
      expect(review.status?.userInfo?.username).toBe(`system:serviceaccount:${ns}:robot`);
      // Authenticated, but nothing is granted to it: 403, not 401.
      const denied = await asRobot.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns }).then(
        () => undefined,
        (e: unknown) => kubeApiError('list secrets as robot', e),
      );
      expect(denied?.status).toBe(403);
      expect(denied?.reason).toBe('Forbidden');
    } finally {
      file.dispose();
    }
    const forged = tokenKubeconfig(`${token!.slice(0, -4)}AAAA`, ns);
    try {
      const err = await loadKubeConfig({ kubeconfig: forged.path }).makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} }).then(() => undefined, (e: unknown) => e);
      expect(isKubeStatus(err, 401)).toBe(true);
    } finally {
      forged.dispose();
    }
  });
});
