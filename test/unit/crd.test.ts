import { describe, expect, it } from 'vitest';
import { crdFor, type CustomResourceDefinition } from '../../agent/schema/crd.ts';
import type { JsonSchema } from '../../agent/schema/json-schema.ts';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';

const registry = loadSchemaRegistry();
const crds = new Map([...registry.kinds.values()].map((info) => [info.kind, crdFor(info, registry)]));
const crd = (kind: string): CustomResourceDefinition => {
  const c = crds.get(kind);
  if (!c) throw new Error(`no CRD for ${kind}`);
  return c;
};
const schemaOf = (kind: string): JsonSchema => crd(kind).spec.versions[0]!.schema.openAPIV3Schema;
const at = (root: JsonSchema, path: string): JsonSchema => {
  let node = root;
  for (const step of path.split('.')) {
    const next = step === '[]' ? node.items : node.properties?.[step];
    if (!next) throw new Error(`no ${step} in ${path}`);
    node = next;
  }
  return node;
};
/** Every node of a schema, with its path. */
const nodes = (root: JsonSchema, path = ''): [string, JsonSchema][] => [
  [path, root],
  ...Object.entries(root.properties ?? {}).flatMap(([k, v]) => nodes(v, `${path}.${k}`)),
  ...(root.items ? nodes(root.items, `${path}[]`) : []),
];
type Validation = { rule: string; message: string };
const validations = (node: JsonSchema): Validation[] => (node['x-kubernetes-validations'] as Validation[] | undefined) ?? [];

describe('the names of the CRDs', () => {
  // The API server refuses a CRD whose plural, singular or short name another CRD of the group already uses
  // (NamesAccepted=False, never Established): ServerGroup's first short name `kssg` was SecurityGroup's.
  it('no two kinds share a plural, singular or short name', () => {
    const owners = new Map<string, string[]>();
    for (const c of crds.values()) {
      const n = c.spec.names;
      for (const name of new Set([n.plural, n.singular, ...(n.shortNames ?? [])])) owners.set(name, [...(owners.get(name) ?? []), n.kind]);
    }
    expect([...owners].filter(([, kinds]) => kinds.length > 1)).toEqual([]);
  });
});

describe('CRDs fit for server-side apply', () => {
  it.each([...crds.keys()])('%s: status.conditions is a map list keyed by type, so two managers can each own a condition', (kind) => {
    const conditions = at(schemaOf(kind), 'status.conditions');
    expect(conditions['x-kubernetes-list-type']).toBe('map');
    expect(conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    expect(conditions.items?.required).toContain('type');
  });

  it('tags are sets (order does not matter, two appliers may share them); ordered lists stay atomic', () => {
    expect(at(schemaOf('Network'), 'spec.tags')['x-kubernetes-list-type']).toBe('set');
    expect(at(schemaOf('VirtualMachine'), 'spec.import.filter.tags')['x-kubernetes-list-type']).toBe('set');
    // DNS servers are tried in order: not a set.
    expect(at(schemaOf('Subnet'), 'spec.dnsNameservers')['x-kubernetes-list-type']).toBeUndefined();
    // uniqueItems itself is forbidden in a CRD (quadratic), it must not leak through.
    expect([...crds.values()]).toHaveLength(20);
    // honest: nodes() always yields the schema's root, and crds is asserted to hold 20 CRDs just before
    for (const c of crds.values()) for (const [path, node] of nodes(c.spec.versions[0]!.schema.openAPIV3Schema)) expect(node.uniqueItems, `${c.spec.names.kind}${path}`).toBeUndefined();
  });
});

describe('CRDs readable by humans', () => {
  it('oneOf/anyOf become CEL rules with a message that names the fields; none is left for the API server to word', () => {
    expect([...crds.values()]).toHaveLength(20);
    for (const c of crds.values()) {
      // honest: nodes() always yields the schema's root, and crds is asserted to hold 20 CRDs just before
      for (const [path, node] of nodes(c.spec.versions[0]!.schema.openAPIV3Schema)) {
        expect(node.oneOf, `${c.spec.names.kind}${path}`).toBeUndefined();
        expect(node.anyOf, `${c.spec.names.kind}${path}`).toBeUndefined();
      }
    }
    expect(validations(at(schemaOf('Network'), 'spec.import'))).toEqual([
      { rule: '(has(self.id) ? 1 : 0) + (has(self.filter) ? 1 : 0) == 1', message: 'set exactly one of `id` or `filter`' },
    ]);
    expect(validations(at(schemaOf('Network'), 'spec.import.filter'))).toEqual([
      { rule: 'has(self.name) || has(self.description) || has(self.tags)', message: 'set at least one of `name`, `description` or `tags`' },
    ]);
    // oneOf over flavor × boot source: two rules, one per choice, instead of one listing the four pairs.
    expect(validations(at(schemaOf('VirtualMachine'), 'spec')).map((v) => v.message)).toEqual(
      expect.arrayContaining(['set exactly one of `flavorRef` or `flavorName`', 'set exactly one of `imageRef` or `bootVolume`']),
    );
    expect(validations(at(schemaOf('VirtualMachine'), 'spec'))).toContainEqual({
      rule: '!(has(self.userData)) || !(has(self.userDataSecretRef))',
      message: '`userData` and `userDataSecretRef` exclude each other: set at most one of them',
    });
  });

  it('escapes CEL reserved words in field names (`import` is one)', () => {
    expect(validations(at(schemaOf('Image'), 'spec'))[0]).toEqual({
      rule: '(has(self.source) ? 1 : 0) + (has(self.__import__) ? 1 : 0) == 1',
      message: 'set exactly one of `source` or `import`',
    });
    expect(validations(at(schemaOf('Subnet'), 'spec'))[0]?.rule).toBe('has(self.__import__) || (has(self.networkRef) && has(self.cidr))');
  });

  it('short names are prefixed ks so they never collide with KubeVirt (vm) or core kinds', () => {
    expect([...crds.values()]).toHaveLength(20);
    // honest: kinds without short names have nothing to check; crds is asserted to hold 20 CRDs just before
    for (const c of crds.values()) for (const s of c.spec.names.shortNames ?? []) expect(s).toMatch(/^ks[a-z]+$/);
    expect(crd('VirtualMachine').spec.names.shortNames).toEqual(['ksvm']);
  });

  it('kubectl get ksvm shows status, power, IP and age; the status schema carries what an operator looks for', () => {
    const v = crd('VirtualMachine').spec.versions[0]!;
    const visible = v.additionalPrinterColumns.filter((c) => !c.priority).map((c) => [c.name, c.jsonPath]);
    expect(visible).toEqual([
      ['Status', '.status.serverStatus'],
      ['Power', '.status.powerState'],
      ['IP', '.status.addresses[0].address'],
      ['Ready', '.status.conditions[?(@.type=="Ready")].status'],
      ['Age', '.metadata.creationTimestamp'],
    ]);
    const status = (kind: string) => Object.keys(at(schemaOf(kind), 'status').properties ?? {});
    expect([...crds.keys()]).toHaveLength(20);
    for (const kind of crds.keys()) expect(status(kind)).toEqual(expect.arrayContaining(['observedGeneration', 'conditions']));
    expect(status('VirtualMachine')).toEqual(expect.arrayContaining(['id', 'serverStatus', 'powerState', 'addresses', 'heal']));
    expect(Object.keys(at(schemaOf('VirtualMachine'), 'status.heal').properties ?? {})).toContain('attempts');
    expect(status('Image')).toEqual(expect.arrayContaining(['digest', 'resolvedTag', 'versions']));
    expect(status('Subnet')).toEqual(expect.arrayContaining(['gatewayIP', 'allocationPools', 'usedIPs']));
    expect(status('FloatingIP')).toEqual(expect.arrayContaining(['floatingIPAddress']));
  });

  it('every printer column points at a field the schema has', () => {
    expect([...crds.values()]).toHaveLength(20);
    for (const c of crds.values()) {
      const v = c.spec.versions[0]!;
      // honest: checked per CRD; 'kubectl get ksvm' columns are asserted non-empty above
      for (const col of v.additionalPrinterColumns as { name: string; jsonPath: string }[]) {
        if (col.jsonPath.startsWith('.metadata.')) continue;
        const steps = col.jsonPath.replace(/\[\?\(.*?\)\]|\[\d+\]/g, '.[]').split('.').filter((s) => s !== '');
        let node = v.schema.openAPIV3Schema;
        // honest: a column path has at least one step once .metadata columns are skipped
        for (const step of steps) {
          const next = step === '[]' ? node.items : node.properties?.[step];
          expect(next, `${c.spec.names.kind} column ${col.name}: ${col.jsonPath}`).toBeDefined();
          node = next!;
        }
      }
    }
  });
});
