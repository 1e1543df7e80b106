import { describe, expect, it } from 'vitest';
import type { RenderedChart } from '../../agent/cloud/render-cloud.ts';
import type { RenderedObject } from '../../agent/cloud/render.ts';
import { backupJob, upgradeOrder, upgradeSteps } from '../../agent/cloud/upgrade.ts';
import { describeStep } from '../../agent/cloud/phases.ts';
import { upgradePlan } from '../../agent/cloud/plan.ts';

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

  it('plans from the chart progress points at, with the window read at the clock given', () => {
    const names = ['mariadb', 'rabbitmq', 'memcached', 'keystone', 'placement', 'glance', 'neutron', 'nova', 'cinder', 'horizon'];
    const rendered = names.map((n) => chart(n));
    const spec = { release: '2025.2', maintenanceWindow: { schedule: '0 2 * * 6', duration: '4h' } };
    const status = { release: '2025.1', upgrade: { from: '2025.1', to: '2025.2', phase: 'Upgrading' as const, service: 'placement', backup: 'Job ns/mariadb-backup-before-2025-2' } };
    const plan = upgradePlan(spec, rendered, status, new Date('2026-11-28T06:30:00Z'));
    expect(plan.slice(0, 3)).toEqual(['upgrade 2025.1 → 2025.2', 'outside the maintenance window; the next one opens at 2026-12-05T02:00:00.000Z', 'backup: done (Job ns/mariadb-backup-before-2025-2), not repeated']);
    expect(plan.slice(3).map((l) => l.split(':')[0])).toEqual(['5. placement', '6. glance', '7. neutron', '8. nova', '9. cinder', '10. horizon']);
    expect(upgradePlan(spec, rendered, status, new Date('2026-11-28T03:00:00Z'))[1]).toBe('maintenance window open until 2026-11-28T06:00:00.000Z');
  });
});
