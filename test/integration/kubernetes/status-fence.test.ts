import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFencedStatus } from '../../../agent/controller/status-fence.ts';
import { serverSideApply } from '../../../agent/kube/client.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * agent/controller/status-fence.ts on the real API server. The race it closes: a replica passes its
 * leadership check, is paused (SIGSTOP, a long GC, a partitioned node) before its status write leaves,
 * the new leader writes, and the old replica's write lands late and undoes the newer status (the
 * OpenStackCloud SIGSTOP test in controller/cloud.test.ts met it in CI). Here the pause is a promise
 * the write waits on after the check, so the interleaving is exact.
 */

const ns = `ks-fence-${randomBytes(3).toString('hex')}`;
const group = 'kupenstack.io';
const version = 'v1alpha1';
const plural = 'networks';
let custom: k8s.CustomObjectsApi;

interface Net { metadata: { name: string; resourceVersion?: string }; status?: { id?: string } }

const get = async (name: string): Promise<Net> => (await custom.getNamespacedCustomObject({ group, version, namespace: ns, plural, name })) as Net;
const applyStatus = async (name: string, manager: string, id: string, resourceVersion?: string): Promise<string | undefined> => {
  const body = { apiVersion: `${group}/${version}`, kind: 'Network', metadata: { name, namespace: ns, ...(resourceVersion ? { resourceVersion } : {}) }, status: { id } };
  const updated = (await custom.patchNamespacedCustomObjectStatus({ group, version, namespace: ns, plural, name, fieldManager: manager, force: true, body }, serverSideApply)) as Net;
  return updated.metadata.resourceVersion;
};
const create = async (name: string): Promise<string> => {
  await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: `${group}/${version}`, kind: 'Network', metadata: { name, namespace: ns }, spec: {} }) });
  return (await get(name)).metadata.resourceVersion!;
};

beforeAll(async () => {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kube.kubeconfig);
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await kubectlOk(['create', 'namespace', ns]);
});
afterAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=false']);
});

describe('a status write fenced by resourceVersion', () => {
  it('a write that was paused past the new leader’s write lands as 409 and writes nothing once the replica no longer acts', async () => {
    const rv = await create('paused');
    let acting = true;
    let resume!: () => void;
    const paused = new Promise<void>((r) => (resume = r));
    let attempts = 0;
    const old = writeFencedStatus({
      resourceVersion: rv,
      acting: () => acting,
      // Past the check, then paused before the request leaves.
      apply: async (v) => {
        attempts++;
        await paused;
        return applyStatus('paused', 'old-leader', 'from-the-old-leader', v);
      },
      read: async () => (await get('paused')).metadata.resourceVersion,
    });
    // Meanwhile the new leader writes, and the old one's renew deadline passes.
    await applyStatus('paused', 'new-leader', 'from-the-new-leader');
    acting = false;
    resume();
    expect(await old).toEqual({ written: false, why: 'stale' });
    expect(attempts).toBe(1);
    expect((await get('paused')).status?.id).toBe('from-the-new-leader');
  });

  it('a replica that still acts reads the object again after a 409 and writes', async () => {
    const rv = await create('acting');
    // A spec or label change moved the version since this replica saw it.
    await kubectlOk(['-n', ns, 'label', 'network', 'acting', 'touched=yes']);
    let attempts = 0;
    const outcome = await writeFencedStatus({
      resourceVersion: rv,
      acting: () => true,
      apply: (v) => {
        attempts++;
        return applyStatus('acting', 'leader', 'written-after-reading-again', v);
      },
      read: async () => (await get('acting')).metadata.resourceVersion,
    });
    expect(outcome.written).toBe(true);
    expect(attempts).toBe(2);
    const now = await get('acting');
    expect(now.status?.id).toBe('written-after-reading-again');
    expect(outcome.written && outcome.resourceVersion).toBe(now.metadata.resourceVersion);
  });

  it('an object deleted meanwhile is `gone`, not an error', async () => {
    const rv = await create('deleted');
    await kubectlOk(['-n', ns, 'delete', 'network', 'deleted']);
    const outcome = await writeFencedStatus({
      resourceVersion: rv,
      acting: () => true,
      apply: (v) => applyStatus('deleted', 'leader', 'x', v),
      read: async () => (await get('deleted')).metadata.resourceVersion,
    });
    expect(outcome).toEqual({ written: false, why: 'gone' });
  });
});
