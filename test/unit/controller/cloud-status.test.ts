import { describe, expect, it } from 'vitest';
import { serviceEndpoints } from '../../../agent/controller/clouds/cloud-endpoints.ts';
import { cloudStatusBody } from '../../../agent/controller/clouds/cloud-status.ts';
import { documentsOf } from '../../../agent/controller/resources/revision.ts';
import { validateNamespace } from '../../../agent/controller/resources/validate-namespace.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';

/** The OpenStackCloud CR's status as the in-cluster controller writes it, and the CR checked as `kupenstack validate` checks a manifest. */
const ready = { type: 'Ready', status: 'True' as const, reason: 'Ready', message: 'ok', lastTransitionTime: '2026-11-25T12:00:00.000Z' };
const catalog = [
  { type: 'identity', endpoints: [{ interface: 'internal', region: 'RegionOne', url: 'http://10.0.0.1:5000/v3' }, { interface: 'public', region: 'RegionOne', url: 'http://127.0.0.1:5000/v3/' }] },
  { type: 'image', endpoints: [{ interface: 'public', region: 'RegionTwo', url: 'http://127.0.0.1:9292' }] },
  { type: 'volumev3', endpoints: [{ interface: 'public', region_id: 'RegionOne', url: 'http://127.0.0.1:8776/v3/%(project_id)s' }] },
];

describe('OpenStackCloud status in the cluster', () => {
  it('maps each service chart to its public catalog endpoint; infrastructure has none; a missing type is Missing, an unreadable catalog Unknown', () => {
    const charts = ['mariadb', 'keystone', 'glance', 'cinder', 'horizon'];
    expect(serviceEndpoints(charts, catalog, 'RegionOne')).toEqual({
      keystone: { serviceType: 'identity', url: 'http://127.0.0.1:5000/v3', state: 'Listed' },
      glance: { serviceType: 'image', state: 'Missing', message: 'the catalog lists no public image endpoint in region RegionOne' },
      cinder: { serviceType: 'volumev3', url: 'http://127.0.0.1:8776/v3/%(project_id)s', state: 'Listed' },
      horizon: { serviceType: 'dashboard', state: 'Missing', message: 'the catalog lists no public dashboard endpoint in region RegionOne (no dashboard service)' },
    });
    expect(serviceEndpoints(charts, catalog).glance).toEqual({ serviceType: 'image', url: 'http://127.0.0.1:9292', state: 'Listed' });
    expect(serviceEndpoints(['keystone'], new Error('connect ECONNREFUSED 127.0.0.1:5000'))).toEqual({ keystone: { serviceType: 'identity', state: 'Unknown', message: 'the Keystone catalog could not be read: connect ECONNREFUSED 127.0.0.1:5000' } });
  });

  it('stamps the generation on every condition, adds the failure, the next window and the endpoints, and drops what this run no longer says', () => {
    const stored = { release: '2025.1', conditions: [ready], services: { keystone: { ready: false, message: 'x'.repeat(5000) }, mariadb: { ready: true } } };
    const body = cloudStatusBody(stored, {
      generation: 4,
      failure: { step: '2:gate', kind: 'Job', name: 'keystone-db-sync', reason: 'BackoffLimitExceeded', exitCode: 1, pod: 'keystone-db-sync-abc', logTail: `${'y'.repeat(5000)}last line` },
      waitUntil: new Date('2026-11-26T02:00:00Z'),
      endpoints: { keystone: { serviceType: 'identity', state: 'Missing', message: 'none' } },
    });
    expect(body.observedGeneration).toBe(4);
    expect(body.conditions).toEqual([{ ...ready, observedGeneration: 4 }]);
    expect(body.failure).toMatchObject({ step: '2:gate', kind: 'Job', name: 'keystone-db-sync', reason: 'BackoffLimitExceeded', exitCode: 1, pod: 'keystone-db-sync-abc' });
    expect(body.failure!.logTail).toHaveLength(4096);
    expect(body.failure!.logTail!.endsWith('last line')).toBe(true);
    expect(body.nextWindow).toBe('2026-11-26T02:00:00.000Z');
    expect(body.services!.keystone!.message).toHaveLength(4096);
    expect(body.services!.keystone!.endpoint).toEqual({ serviceType: 'identity', state: 'Missing', message: 'none' });
    expect(body.services!.mariadb).toEqual({ ready: true });

    const next = cloudStatusBody(body, { generation: 5 });
    expect(next.failure).toBeUndefined();
    expect(next.nextWindow).toBeUndefined();
    expect(next.observedGeneration).toBe(5);
  });

  it('checks CRs as `kupenstack validate` checks manifests: a second cloud in the cluster is rejected, the first is not', () => {
    const cr = (name: string, release = '2025.1') => ({ kind: 'OpenStackCloud', object: { apiVersion: 'kupenstack.io/v1alpha1', kind: 'OpenStackCloud', metadata: { name, generation: 1 }, spec: { release, chart: { repository: 'http://127.0.0.1:8190/charts' } } } });
    const { rejected } = validateNamespace(documentsOf([cr('one'), cr('two')]), loadSchemaRegistry());
    expect([...rejected.keys()]).toEqual(['/OpenStackCloud/two']);
    expect(rejected.get('/OpenStackCloud/two')!.map((d) => d.code)).toEqual(['cloud.one-per-cluster']);
    expect([...validateNamespace(documentsOf([cr('bad', '2099.1')]), loadSchemaRegistry()).rejected.values()].flat().map((d) => d.code)).toEqual(['cloud.release-unknown']);
  });
});

describe('OpenStackCloud status while a run goes on', () => {
  it('says Reconciling for the new generation; observedGeneration and Ready keep the generation they were computed for', () => {
    const done = cloudStatusBody({ conditions: [ready, { ...ready, type: 'Reconciling', status: 'False' }] }, { generation: 2 });
    const running = cloudStatusBody({ conditions: [ready, { ...ready, type: 'Reconciling', status: 'True', reason: 'Applying' }] }, { generation: 3, progressOver: done });
    expect(running.observedGeneration).toBe(2);
    expect(running.conditions!.find((c) => c.type === 'Ready')!.observedGeneration).toBe(2);
    expect(running.conditions!.find((c) => c.type === 'Reconciling')!.observedGeneration).toBe(3);
    // The first run of a cloud: nothing was computed before, so no generation is claimed but Reconciling's.
    const first = cloudStatusBody({ conditions: [{ ...ready, type: 'Reconciling', status: 'True' }] }, { generation: 1, progressOver: {} });
    expect(first.observedGeneration).toBeUndefined();
    expect(first.conditions).toEqual([{ ...ready, type: 'Reconciling', status: 'True', observedGeneration: 1 }]);
  });
});
