import { describe, expect, it } from 'vitest';
import { CHARTS } from '../../agent/cloud/catalogue.ts';
import { installGroups } from '../../agent/cloud/groups.ts';
import { describeStep, installSteps } from '../../agent/cloud/phases.ts';
import type { RenderedChart } from '../../agent/cloud/render-cloud.ts';
import { parseRendered } from '../../agent/cloud/render.ts';
import { enabledCharts } from '../../agent/cloud/spec.ts';

describe('install groups', () => {
  it('are infrastructure → keystone → the API services → nova and neutron together (one cycle, one group)', () => {
    expect(installGroups(enabledCharts({ release: '2025.1' }))).toEqual([['mariadb', 'rabbitmq', 'memcached'], ['keystone'], ['glance', 'placement', 'cinder', 'horizon'], ['nova', 'neutron']]);
  });

  it('follow the needs of optional charts too', () => {
    const groups = installGroups(enabledCharts({ release: '2025.1', services: { heat: { enabled: true }, magnum: { enabled: true }, octavia: { enabled: true } } }));
    expect(groups).toEqual([['mariadb', 'rabbitmq', 'memcached'], ['keystone'], ['glance', 'placement', 'cinder', 'horizon', 'heat'], ['nova', 'neutron', 'magnum'], ['octavia']]);
    expect(groups.flat().sort()).toEqual(CHARTS.filter((c) => c.enabledByDefault || ['heat', 'magnum', 'octavia'].includes(c.chart)).map((c) => c.chart).sort());
  });
});

const chart = (name: string, yaml: string): RenderedChart => ({ chart: name, version: '1', source: 'test', values: {}, objects: parseRendered(yaml, name), millis: { fetch: 0, render: 0 } });
const job = (name: string, weight?: number, hook = 'post-install,post-upgrade') =>
  `---\n# Source: x/templates/jobs.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: ${name}\n${weight === undefined ? '' : `  annotations:\n    helm.sh/hook: ${hook}\n    helm.sh/hook-weight: "${weight}"\n`}spec: {}\n`;
const obj = (kind: string, name: string, apiVersion = 'v1') => `---\napiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: ${name}\nspec: {}\n`;

describe('install steps', () => {
  it('per group: plain objects (config first), hook Jobs by weight, then the workload gate', () => {
    const steps = installSteps([
      chart('mariadb', obj('StatefulSet', 'mariadb-server', 'apps/v1') + obj('Service', 'mariadb') + obj('Secret', 'mariadb-dbadmin-password')),
      chart('keystone', obj('Deployment', 'keystone-api', 'apps/v1') + obj('ConfigMap', 'keystone-bin') + job('keystone-db-sync', -4) + job('keystone-db-init', -5) + job('keystone-bootstrap', 5) + job('keystone-db-drop', 0, 'pre-delete') + `---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: keystone-test\n  annotations: {helm.sh/hook: test-success}\n`),
      chart('nova', obj('DaemonSet', 'nova-compute', 'apps/v1') + job('nova-db-sync', -4) + job('nova-cell-setup')),
      chart('neutron', obj('Deployment', 'neutron-server', 'apps/v1') + job('neutron-db-sync', -4)),
    ]);
    expect(steps.map(describeStep)).toEqual([
      '0:apply [mariadb] Secret/mariadb-dbadmin-password Service/mariadb StatefulSet/mariadb-server',
      '0:gate [mariadb] StatefulSet/mariadb-server',
      '1:apply [keystone] ConfigMap/keystone-bin Deployment/keystone-api',
      '1:post-hooks -5 [keystone] Job/keystone-db-init',
      '1:post-hooks -4 [keystone] Job/keystone-db-sync',
      '1:post-hooks 5 [keystone] Job/keystone-bootstrap',
      '1:gate [keystone] Deployment/keystone-api',
      '2:apply [nova,neutron] DaemonSet/nova-compute Job/nova-cell-setup Deployment/neutron-server',
      '2:post-hooks -4 [nova,neutron] Job/nova-db-sync Job/neutron-db-sync',
      '2:gate [nova,neutron] DaemonSet/nova-compute Job/nova-cell-setup Deployment/neutron-server',
    ]);
  });
});
