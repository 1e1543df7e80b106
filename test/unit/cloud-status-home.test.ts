import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { homeOf, type CloudStatusHome } from '../../agent/cloud/status-home.ts';
import { CloudStore, type InventoryEntry } from '../../agent/cloud/store.ts';
import type { OpenStackCloudStatus } from '../../agent/model/kinds.generated.ts';

/**
 * The cloud's status has one home: the CR's status in the cluster, the cloud's ConfigMap standalone. A status an
 * earlier KupenStack kept in the ConfigMap (it wrote both, and resumed from the ConfigMap) is moved to the CR once:
 * saved there first, then removed from the ConfigMap, so a failed save loses nothing. No API server: the ConfigMap's
 * writes are recorded.
 */
type Part = { inventory?: InventoryEntry[]; status?: OpenStackCloudStatus | null };

// Never contacted: every write of the store is recorded below (and the cases read no custom resource).
const kc = new KubeConfig();
kc.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });

function recordingStore(): { store: CloudStore; writes: Part[] } {
  const store = new CloudStore(kc, 'openstack', 'cloud');
  const writes: Part[] = [];
  store.save = (part) => Promise.resolve(void writes.push(structuredClone(part)));
  return { store, writes };
}

const midUpgrade: OpenStackCloudStatus = { release: '2025.1', upgrade: { from: '2025.1', to: '2025.2', phase: 'Upgrading', service: 'glance', backup: 'Job openstack/mariadb-backup-before-2025-2' } };

function crHome(status: OpenStackCloudStatus, fail = false): { home: CloudStatusHome; saved: OpenStackCloudStatus[] } {
  const saved: OpenStackCloudStatus[] = [];
  return { saved, home: { status, save: ({ status: s }) => (fail ? Promise.reject(new Error('status not written')) : Promise.resolve(void saved.push(structuredClone(s)))) } };
}

describe('the cloud status home', () => {
  it('standalone: the ConfigMap is the home; its status is the one read with the inventory, and saves go back to it', async () => {
    const { store, writes } = recordingStore();
    const { home, status } = await homeOf(store, { inventory: [], status: midUpgrade }, { kubeConfig: kc, log: () => undefined });
    expect(status).toEqual(midUpgrade);
    expect(home.status).toEqual(midUpgrade);
    await home.save({ status: { ...midUpgrade, release: '2025.2' } });
    expect(writes).toEqual([{ status: { ...midUpgrade, release: '2025.2' } }]);
  });

  it('in the cluster: a status left in the ConfigMap is saved to the CR first, then removed from the ConfigMap, and the pass starts from it', async () => {
    const { store, writes } = recordingStore();
    const cr = crHome({ release: '2025.1' });
    const log: string[] = [];
    const { home, status } = await homeOf(store, { inventory: [], status: midUpgrade }, { home: cr.home, kubeConfig: kc, log: (l) => log.push(l) });
    expect(status.upgrade).toMatchObject({ service: 'glance', backup: 'Job openstack/mariadb-backup-before-2025-2' });
    expect(cr.saved).toEqual([midUpgrade]);
    expect(writes).toEqual([{ status: null }]);
    expect(home).toBe(cr.home);
    expect(log).toEqual(['cloud cloud: status moved from ConfigMap openstack/kupenstack-cloud-cloud-state to the OpenStackCloud\'s status']);
  });

  it('in the cluster: a failed save to the CR leaves the ConfigMap\'s status where it is (the next pass moves it)', async () => {
    const { store, writes } = recordingStore();
    const cr = crHome({}, true);
    await expect(homeOf(store, { inventory: [], status: midUpgrade }, { home: cr.home, kubeConfig: kc, log: () => undefined })).rejects.toThrow('status not written');
    expect(writes).toEqual([]);
  });

  it('in the cluster: with nothing in the ConfigMap, the CR\'s status is read and nothing is written', async () => {
    const { store, writes } = recordingStore();
    const cr = crHome(midUpgrade);
    const { status } = await homeOf(store, { inventory: [], status: {} }, { home: cr.home, kubeConfig: kc, log: () => undefined });
    expect(status).toEqual(midUpgrade);
    expect(cr.saved).toEqual([]);
    expect(writes).toEqual([]);
  });
});
