import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { adminAccess, adminCloudConfig, adminCloudsYaml, internalUrl } from '../../agent/cloud/admin-clouds.ts';
import { CHARTS } from '../../agent/cloud/catalogue.ts';
import { generateSecrets } from '../../agent/cloud/secrets.ts';
import { chartValues, type Values } from '../../agent/cloud/values.ts';
import { loadCloud } from '../../agent/openstack/clouds.ts';

const dir = mkdtempSync(join(tmpdir(), 'ks-admin-clouds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const keystone = CHARTS.find((c) => c.chart === 'keystone')!;
/** The test charts' own values.yaml (the osh-service chart keystone is built from). */
const testChartDefaults = parse(readFileSync(join(import.meta.dirname, '../charts/osh-service/values.yaml'), 'utf8')) as Values;

describe("the install's admin access", () => {
  it("Keystone's in-cluster URL is endpoints.identity at the internal interface, from the chart's defaults and KupenStack's wiring (the cloud's namespace)", () => {
    const secrets = generateSecrets();
    const values = chartValues({ spec: { release: '2022.2' }, chart: keystone, defaults: testChartDefaults, secrets, namespace: 'openstack' });
    expect(internalUrl(testChartDefaults, values, 'identity', 'openstack')).toBe('http://keystone-api.openstack.svc.cluster.local:5000/v3');
  });

  it('reads OpenStack-Helm layouts: per-interface scheme, host, port and path maps; a values override wins; the endpoint namespace and cluster suffix apply', () => {
    const defaults: Values = {
      endpoints: {
        cluster_domain_suffix: 'cluster.local',
        identity: { hosts: { default: 'keystone', internal: 'keystone-api' }, scheme: { default: 'http', internal: 'https' }, port: { api: { default: 80, internal: 5000 } }, path: { default: '/v3' } },
      },
    };
    expect(internalUrl(defaults, {}, 'identity', 'os')).toBe('https://keystone-api.os.svc.cluster.local:5000/v3');
    const over: Values = { endpoints: { cluster_domain_suffix: 'example.internal', identity: { namespace: 'identity-ns', hosts: { internal: 'ks' } } } };
    expect(internalUrl(defaults, over, 'identity', 'os')).toBe('https://ks.identity-ns.svc.example.internal:5000/v3');
    // No host or port: no URL (nothing to log in to), never a guess.
    expect(internalUrl({ endpoints: { identity: { hosts: { default: 'keystone' } } } }, {}, 'identity', 'os')).toBeUndefined();
    expect(internalUrl({}, {}, 'identity', 'os')).toBeUndefined();
  });

  it('the clouds.yaml it writes is read back by the clouds.yaml loader as the same admin, project and region the catalog read uses', () => {
    const secrets = generateSecrets();
    const access = adminAccess('prod', { release: '2022.2', region: 'RegionTwo' }, 'http://keystone-api.openstack.svc.cluster.local:5000/v3', secrets)!;
    const file = join(dir, 'clouds.yaml');
    writeFileSync(file, adminCloudsYaml(access), { mode: 0o600 });
    const loaded = loadCloud('prod', file);
    expect(loaded).toEqual(adminCloudConfig(access, file));
    expect(loaded).toMatchObject({
      authUrl: 'http://keystone-api.openstack.svc.cluster.local:5000/v3',
      credentials: { type: 'password', username: 'admin', password: secrets.identityAdmin, userDomainId: 'default' },
      project: { name: 'admin', domainId: 'default' },
      regionName: 'RegionTwo',
      interface: 'internal',
      verify: true,
    });
    // The region defaults as the charts' wiring does; without an identity URL there is no access.
    expect(adminAccess('prod', { release: '2022.2' }, 'http://k:5000/v3', secrets)?.region).toBe('RegionOne');
    expect(adminAccess('prod', { release: '2022.2' }, undefined, secrets)).toBeUndefined();
  });
});
