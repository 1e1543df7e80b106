import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../agent/controller/resources/objects.ts';
import { writeFencedStatus } from '../../../agent/controller/resources/status-fence.ts';
import { KubeStatusStore, type NamespaceObject } from '../../../agent/controller/resources/status-store.ts';
import { serverSideApply } from '../../../agent/kube/client.ts';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';

/**
 * agent/controller/resources/status-fence.ts on the real API server. The race it closes: a replica passes its
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

describe("a resource's status written by the namespace run's store (KubeStatusStore), fenced the same way", () => {
  const kind = { kind: 'Network', plural, statusFields: new Set(['id', 'conditions', 'observedGeneration']) };
  /** The store over one object as the watch cache held it when the run started (its resourceVersion then). */
  const storeOver = async (name: string, acting: () => boolean, log: string[]): Promise<{ store: KubeStatusStore; address: string }> => {
    const object = (await get(name)) as unknown as KubeObject;
    const address = `${ns}/Network/${name}`;
    const entries = new Map<string, NamespaceObject>([[address, { kind, object }]]);
    return { store: new KubeStatusStore(custom, ns, entries, new Map(), (l) => log.push(l), new Set(), acting), address };
  };

  it('a replica that lost the lease after its check does not undo the new leader’s status (its write meets 409)', async () => {
    await create('store-paused');
    const log: string[] = [];
    // The check before the write passes; every later one answers what the lease says by then: no longer leading.
    let checks = 0;
    const { store, address } = await storeOver('store-paused', () => checks++ === 0, log);
    // The new leader wrote after the old replica's run read the object.
    await applyStatus('store-paused', 'new-leader', 'from-the-new-leader');
    await store.putResource(address, { id: 'from-the-old-leader' });
    expect((await get('store-paused')).status?.id).toBe('from-the-new-leader');
    expect(log.join('\n')).toMatch(/status not written \(changed by another writer and this replica does not act any more\)/);
  });

  it('a replica that still acts writes over a spec or label change made during its run, and its next write too', async () => {
    await create('store-acting');
    const log: string[] = [];
    const { store, address } = await storeOver('store-acting', () => true, log);
    await kubectlOk(['-n', ns, 'label', 'network', 'store-acting', 'touched=yes']);
    await store.putResource(address, { id: 'first' });
    expect((await get('store-acting')).status?.id).toBe('first');
    await store.putResource(address, { id: 'second' });
    expect((await get('store-acting')).status?.id).toBe('second');
    expect(log).toEqual([]);
  });
});
