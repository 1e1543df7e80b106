import { group, version, type KindInfo, type SchemaRegistry } from './registry.ts';
import type { JsonSchema } from './json-schema.ts';

/** Formats kube-apiserver knows; others are validated by the agent only. */
const kubeFormats = new Set(['ipv4', 'ipv6', 'cidr', 'mac', 'uuid', 'date-time', 'uri', 'hostname', 'date', 'duration', 'byte', 'password', 'email']);

/** Keywords a structural schema may carry, mapped one to one. */
const copied = [
  'description',
  'type',
  'format',
  'pattern',
  'enum',
  'default',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'required',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
] as const;

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames?: string[]; categories: string[] };
    scope: 'Namespaced' | 'Cluster';
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: Record<string, unknown>[];
      schema: { openAPIV3Schema: JsonSchema };
    }[];
  };
}

/** The CRD of one kind: the kind's JSON Schema made structural ($refs inlined, agent-only keywords dropped). */
export function crdFor(info: KindInfo, registry: SchemaRegistry): CustomResourceDefinition {
  const schema = info.schema;
  const specSchema = schema.properties?.spec;
  const statusSchema = schema.properties?.status;
  const openAPIV3Schema: JsonSchema = {
    description: schema.description,
    type: 'object',
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
      kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
      metadata: { type: 'object' },
      ...(specSchema ? { spec: toStructural(registry, specSchema, schema) } : {}),
      ...(statusSchema ? { status: toStructural(registry, statusSchema, schema) } : {}),
    },
  };
  const singular = info.kind.toLowerCase();
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${info.plural}.${group}`, labels: { 'app.kubernetes.io/part-of': 'kupenstack' } },
    spec: {
      group,
      names: {
        kind: info.kind,
        listKind: `${info.kind}List`,
        plural: info.plural,
        singular,
        ...(info.shortNames.length ? { shortNames: info.shortNames } : {}),
        categories: ['kupenstack'],
      },
      scope: info.scope,
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [...info.printerColumns.map((c) => ({ ...c })), { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }],
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}

/** One schema node as a structural one: $refs inlined, only the keywords a CRD may carry, combinators as CEL rules, list types for server-side apply. */
function toStructural(registry: SchemaRegistry, node: JsonSchema, root: JsonSchema, name = ''): JsonSchema {
  if (node.$ref) {
    const target = registry.resolve(node.$ref, root);
    const merged = toStructural(registry, target.schema, target.root, name);
    // A description at the referencing property is more specific than the definition's.
    return node.description ? { ...merged, description: node.description } : merged;
  }
  const out: JsonSchema = {};
  for (const key of copied) if (node[key] !== undefined) (out as Record<string, unknown>)[key] = node[key];
  if (out.format && !kubeFormats.has(out.format)) delete out.format;
  // OpenAPI v3.0 (what CRDs speak) writes exclusive bounds as a boolean beside minimum/maximum.
  if (typeof node.exclusiveMinimum === 'number') Object.assign(out, { minimum: node.exclusiveMinimum, exclusiveMinimum: true });
  if (typeof node.exclusiveMaximum === 'number') Object.assign(out, { maximum: node.exclusiveMaximum, exclusiveMaximum: true });
  if (node.properties) {
    out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, toStructural(registry, v, root, k)]));
  }
  if (node.items) out.items = toStructural(registry, node.items, root);
  if (node.additionalProperties && typeof node.additionalProperties === 'object' && !node.properties) {
    out.additionalProperties = toStructural(registry, node.additionalProperties, root);
  }
  const rules = celRules(node);
  if (rules.length) out['x-kubernetes-validations'] = rules;
  if (!out.type && !out['x-kubernetes-int-or-string'] && !out['x-kubernetes-preserve-unknown-fields']) out.type = inferType(node);
  listType(out, node, name);
  return out;
}

/**
 * oneOf/anyOf of "which fields are set" become CEL rules with a message a
 * user can act on; the API server words a oneOf failure as "must validate
 * one and only one schema".
 */
function celRules(node: JsonSchema): { rule: string; message: string }[] {
  return (['oneOf', 'anyOf'] as const).flatMap((c) => {
    const branches = node[c];
    if (!branches?.every(onlyRequired)) return [];
    const factors = c === 'oneOf' ? productFactors(branches) : undefined;
    return factors
      ? factors.map((f) =>
          celRule(
            'oneOf',
            f.map((field) => ({ required: [field] })),
          ),
        )
      : [celRule(c, branches)];
  });
}

/**
 * How server-side apply merges a list. `conditions` are keyed by `type`, so
 * several managers can own one condition each (metav1.Condition's convention);
 * a scalar list with unique items is a set; other lists stay atomic.
 */
function listType(out: JsonSchema, node: JsonSchema, name: string): void {
  if (out.type !== 'array' || !out.items) return;
  if (name === 'conditions' && out.items.required?.includes('type')) {
    Object.assign(out, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
  } else if (node.uniqueItems && out.items.type !== 'object' && out.items.type !== 'array') {
    out['x-kubernetes-list-type'] = 'set';
  }
}

/** CEL's reserved words and characters, escaped as the API server expects in field selections. */
const celReserved = new Set([
  'true',
  'false',
  'null',
  'in',
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'namespace',
  'return',
  'var',
  'void',
  'while',
]);
function celField(name: string): string {
  if (celReserved.has(name)) return `__${name}__`;
  return name.replace(/_/g, '__underscores__').replace(/\./g, '__dot__').replace(/-/g, '__dash__').replace(/\//g, '__slash__');
}

/** One branch ("these fields set, those not") as a CEL condition and as words. */
function branchOf(branch: JsonSchema): { cel: string; words: string; negated: string[] } {
  const set = branch.required ?? [];
  const unset = branch.not?.required ?? [];
  const cel = [
    ...set.map((f) => `has(self.${celField(f)})`),
    ...(unset.length ? [`!(${unset.map((f) => `has(self.${celField(f)})`).join(' && ')})`] : []),
  ].join(' && ');
  return { cel: set.length + (unset.length ? 1 : 0) > 1 ? `(${cel})` : cel, words: set.map((f) => `\`${f}\``).join(' and '), negated: unset };
}

function orList(items: string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/**
 * oneOf over every pair of a field from F and a field from G ("flavorRef or
 * flavorName, with imageRef or bootVolume") is "exactly one of F" and "exactly
 * one of G": two short messages instead of one listing every pair.
 */
function productFactors(branches: JsonSchema[]): [string[], string[]] | undefined {
  if (!branches.every((b) => b.required?.length === 2 && !b.not)) return undefined;
  const f = [...new Set(branches.map((b) => b.required![0]!))];
  const g = [...new Set(branches.map((b) => b.required![1]!))];
  if (f.some((x) => g.includes(x)) || f.length * g.length !== branches.length || f.length < 2 || g.length < 2) return undefined;
  const pairs = new Set(branches.map((b) => b.required!.join('\0')));
  return f.every((x) => g.every((y) => pairs.has(`${x}\0${y}`))) ? [f, g] : undefined;
}

/** oneOf/anyOf whose branches only say which fields are set, as an x-kubernetes-validations rule. */
function celRule(combinator: 'oneOf' | 'anyOf', branches: JsonSchema[]): { rule: string; message: string } {
  const parts = branches.map(branchOf);
  if (combinator === 'oneOf') {
    return { rule: `${parts.map((p) => `(${p.cel} ? 1 : 0)`).join(' + ')} == 1`, message: `set exactly one of ${orList(parts.map((p) => p.words))}` };
  }
  const rule = parts.map((p) => p.cel).join(' || ');
  // anyOf(not a, not b) is "a and b exclude each other".
  if (parts.every((p) => p.words === '' && p.negated.length === 1)) {
    return { rule, message: `${parts.map((p) => `\`${p.negated[0]}\``).join(' and ')} exclude each other: set at most one of them` };
  }
  return { rule, message: `set at least one of ${orList(parts.map((p) => p.words))}` };
}

function onlyRequired(branch: JsonSchema): boolean {
  return Object.keys(branch).every(
    (k) => k === 'required' || (k === 'not' && branch.not !== undefined && Object.keys(branch.not).every((n) => n === 'required')),
  );
}

function inferType(node: JsonSchema): NonNullable<JsonSchema['type']> {
  if (node.properties || node.additionalProperties) return 'object';
  if (node.items) return 'array';
  const first = node.enum?.[0];
  if (typeof first === 'number') return Number.isInteger(first) ? 'integer' : 'number';
  if (typeof first === 'boolean') return 'boolean';
  return 'string';
}
