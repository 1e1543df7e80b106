import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { chartInfo } from '../../agent/cloud/catalogue.ts';
import { generateSecrets } from '../../agent/cloud/secrets.ts';
import { chartValues, withRegistry, type Values } from '../../agent/cloud/values.ts';
import { OSH_KEYS } from '../golden/osh-keys.ts';

// `UPDATE_GOLDEN=1 npx vitest run --project unit test/unit/cloud-values.test.ts` rewrites the golden file; read the diff.
const goldenFile = join('test/golden', 'cloud-values.keystone.yaml');

/** The defaults of the real keystone chart that the values depend on (keys from its values.yaml at 2025.2.0). */
const keystoneDefaults: Values = {
  pod: { replicas: { api: 1 } },
  images: { tags: { keystone_api: 'quay.io/airshipit/keystone:2025.1-ubuntu_noble', keystone_db_sync: 'quay.io/airshipit/keystone:2025.1-ubuntu_noble', bootstrap: 'quay.io/airshipit/heat:2025.1-ubuntu_noble', dep_check: 'quay.io/airshipit/kubernetes-entrypoint:latest-ubuntu_focal' } },
};
const override: Values = { images: { tags: { keystone_api: 'quay.io/airshipit/keystone:2025.2-ubuntu_noble', keystone_db_sync: 'quay.io/airshipit/keystone:2025.2-ubuntu_noble' } } };
const secrets = generateSecrets((n) => Buffer.alloc(n, 1));

function leafPaths(v: unknown, prefix: string[] = []): string[][] {
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) return Object.entries(v).flatMap(([k, x]) => leafPaths(x, [...prefix, k]));
  return [prefix];
}
const matches = (path: string[], pattern: string): boolean => {
  const p = pattern.split('.');
  if (p.at(-1) === '*' && p.length <= path.length && p.slice(0, -1).every((s, i) => s === '*' || s === path[i])) return p.length === path.length || ['conf'].includes(p[0]!);
  return p.length === path.length && p.every((s, i) => s === '*' || s === path[i]);
};

describe('values for the real OpenStack-Helm charts', () => {
  const values = chartValues({ spec: { release: '2025.2', region: 'RegionTwo', size: 'medium', services: { keystone: { conf: { keystone: { DEFAULT: { max_token_size: 255 } } } } } }, chart: chartInfo('keystone')!, defaults: keystoneDefaults, releaseOverride: override, secrets, namespace: 'openstack' });

  it('only set keys the real charts have', () => {
    const paths = leafPaths(values);
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((p) => !OSH_KEYS.some((k) => matches(p, k))).map((p) => p.join('.'))).toEqual([]);
  });

  it('match the golden file', () => {
    const text = YAML.stringify(values, { sortMapEntries: true });
    if (process.env.UPDATE_GOLDEN === '1') {
      mkdirSync('test/golden', { recursive: true });
      writeFileSync(goldenFile, text);
    }
    expect(text, `${goldenFile} differs; if intended: UPDATE_GOLDEN=1 npx vitest run --project unit test/unit/cloud-values.test.ts`).toBe(readFileSync(goldenFile, 'utf8'));
  });

  it('rewrite registries of images with and without one', () => {
    expect(withRegistry('quay.io/airshipit/keystone:2025.1', 'mirror.example.com/osh')).toBe('mirror.example.com/osh/airshipit/keystone:2025.1');
    expect(withRegistry('docker.io/library/rabbitmq:3.13', 'm.example.com:5000/')).toBe('m.example.com:5000/library/rabbitmq:3.13');
    expect(withRegistry('openstackhelm/mariadb:x', 'm.example.com')).toBe('m.example.com/openstackhelm/mariadb:x');
  });
});
