import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { generatedFiles } from '../../agent/schema/generate.ts';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { structuralProblems } from '../../agent/schema/structural.ts';
import type { CustomResourceDefinition } from '../../agent/schema/crd.ts';

const registry = loadSchemaRegistry();
const files = generatedFiles(registry);

describe('files generated from schemas/', () => {
  it('are up to date (run `npm run generate` after editing a schema)', () => {
    expect(files.size).toBeGreaterThan(0);
    for (const [path, content] of files) expect(readFileSync(path, 'utf8'), path).toBe(content);
    const crdsOnDisk = readdirSync('deploy/crds').map((f) => `deploy/crds/${f}`).sort();
    expect(crdsOnDisk).toEqual([...files.keys()].filter((p) => p.startsWith('deploy/crds/')).sort());
    const chartCrds = readdirSync('deploy/chart/kupenstack/crds').map((f) => `deploy/chart/kupenstack/crds/${f}`).sort();
    expect(chartCrds).toEqual([...files.keys()].filter((p) => p.startsWith('deploy/chart/kupenstack/crds/')).sort());
  });

  it('cover all twenty kinds with the right scope', () => {
    const namespaced = ['Image', 'Flavor', 'KeyPair', 'SecurityGroup', 'Network', 'Subnet', 'Router', 'Port', 'FloatingIP', 'VirtualMachine', 'Volume', 'VolumeSnapshot', 'ServerGroup', 'LoadBalancer', 'ProjectQuota', 'ApplicationCredential'];
    const cluster = ['OpenStackCloud', 'OpenStackCloudConnection', 'Sync', 'ImageRollout'];
    expect([...registry.kinds.keys()].sort()).toEqual([...namespaced, ...cluster].sort());
    for (const k of namespaced) expect(registry.kinds.get(k)?.scope).toBe('Namespaced');
    for (const k of cluster) expect(registry.kinds.get(k)?.scope).toBe('Cluster');
  });

  describe.each([...files].filter(([p]) => p.startsWith('deploy/crds/')))('%s', (_path, content) => {
    const crd = parse(content) as CustomResourceDefinition;
    it('is a structural apiextensions.k8s.io/v1 CRD with status, printer columns, short names and the kupenstack category', () => {
      expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
      expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.kupenstack.io`);
      expect(crd.spec.names.categories).toEqual(['kupenstack']);
      expect(crd.spec.names.shortNames?.length).toBeGreaterThan(0);
      const v = crd.spec.versions[0]!;
      expect(v.name).toBe('v1alpha1');
      expect(v.subresources).toEqual({ status: {} });
      const columns = v.additionalPrinterColumns.map((c) => c.name);
      expect(columns).toContain('Ready');
      expect(columns.at(-1)).toBe('Age');
      expect(structuralProblems(v.schema.openAPIV3Schema)).toEqual([]);
    });
  });

  it('the structural check catches what kube-apiserver rejects', () => {
    expect(structuralProblems({ type: 'object', properties: { a: {} } })).toEqual(['.a: every node needs a type']);
    expect(structuralProblems({ type: 'object', properties: { a: { type: 'string' } }, oneOf: [{ required: ['b'] }] })).toEqual(['.oneOf[0]: "b" must also be specified outside the junctor']);
    expect(structuralProblems({ type: 'object', additionalProperties: false, properties: {} })).toHaveLength(2);
    expect(structuralProblems({ type: 'object', $ref: '#/x' })).toEqual(['.: keyword "$ref" is not allowed in a CRD schema'.replace('.:', ':')]);
  });
});

describe('the TypeScript types', () => {
  it('declare every kind with its spec', () => {
    const ts = readFileSync(join('agent/model/kinds.generated.ts'), 'utf8');
    expect(registry.kinds.size).toBeGreaterThan(0);
    for (const kind of registry.kinds.keys()) expect(ts).toContain(`export interface ${kind} {`);
  });
});
