import { describe, expect, it } from 'vitest';
import type { RenderedChart } from '../../agent/cloud/render-cloud.ts';
import type { RenderedObject } from '../../agent/cloud/render.ts';
import { backupJob, upgradeOrder, upgradeSteps } from '../../agent/cloud/upgrade.ts';
import { describeStep } from '../../agent/cloud/phases.ts';

const obj = (chart: string, kind: string, name: string, phase: RenderedObject['phase'] = { kind: 'main' }, spec: Record<string, unknown> = {}): RenderedObject => ({ chart, apiVersion: kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1', kind, name, phase, object: { apiVersion: 'x', kind, metadata: { name }, spec } });
const chart = (name: string, objects: RenderedObject[] = []): RenderedChart => ({ chart: name, version: '0.1.0', source: 'test', values: {}, objects, millis: { fetch: 0, render: 0 } });

describe('upgrade plan', () => {
  it('orders infrastructure first, then identity, placement, image, network, compute, block storage, dashboard', () => {
    const names = ['mariadb', 'rabbitmq', 'memcached', 'keystone', 'glance', 'placement', 'cinder', 'horizon', 'nova', 'neutron'];
    expect(upgradeOrder(names.map((n) => chart(n)))).toEqual(['mariadb', 'rabbitmq', 'memcached', 'keystone', 'placement', 'glance', 'neutron', 'nova', 'cinder', 'horizon']);
  });

  it('moves a chart by its map: configuration, Jobs by phase and weight, workloads gated, contract last', () => {
    const c = chart('keystone', [
      obj('keystone', 'Deployment', 'keystone-api'),
      obj('keystone', 'ConfigMap', 'keystone-etc'),
      obj('keystone', 'Job', 'keystone-db-sync-contract', { kind: 'hook', when: 'post', weight: 2 }),
      obj('keystone', 'Job', 'keystone-db-sync-expand', { kind: 'hook', when: 'post', weight: -4 }),
      obj('keystone', 'Job', 'keystone-db-sync-migrate', { kind: 'hook', when: 'post', weight: 1 }),
    ]);
    expect(upgradeSteps(c, 3).map(describeStep)).toEqual([
      '3:apply [keystone] ConfigMap/keystone-etc',
      '3:post-hooks -4 [keystone] Job/keystone-db-sync-expand',
      '3:post-hooks 1 [keystone] Job/keystone-db-sync-migrate',
      '3:apply [keystone] Deployment/keystone-api',
      '3:gate [keystone] Deployment/keystone-api',
      '3:post-hooks 2 [keystone] Job/keystone-db-sync-contract',
    ]);
  });

  it('makes the backup Job from the mariadb chart\'s backup CronJob, named for the target release', () => {
    const mariadb = chart('mariadb', [obj('mariadb', 'CronJob', 'mariadb-backup', { kind: 'main' }, { jobTemplate: { spec: { backoffLimit: 3 } } })]);
    const job = backupJob([mariadb], '2025.2');
    expect(job?.name).toBe('mariadb-backup-before-2025-2');
    expect(job?.object.spec).toEqual({ backoffLimit: 3 });
    expect(backupJob([chart('mariadb')], '2025.2')).toBeUndefined();
  });
});
