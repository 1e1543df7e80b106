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
  const toStructural = (node: JsonSchema, root: JsonSchema): JsonSchema => {
    if (node.$ref) {
      const target = registry.resolve(node.$ref, root);
      const merged = toStructural(target.schema, target.root);
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
      out.properties = Object.fromEntries(Object.entries(node.properties).map(([k, v]) => [k, toStructural(v, root)]));
    }
    if (node.items) out.items = toStructural(node.items, root);
    if (node.additionalProperties && typeof node.additionalProperties === 'object' && !node.properties) {
      out.additionalProperties = toStructural(node.additionalProperties, root);
    }
    for (const combinator of ['oneOf', 'anyOf'] as const) {
      const branches = node[combinator];
      if (branches && branches.every(onlyRequired)) out[combinator] = branches.map((b) => ({ ...b }));
    }
    if (!out.type && !out['x-kubernetes-int-or-string'] && !out['x-kubernetes-preserve-unknown-fields']) out.type = inferType(node);
    return out;
  };

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
      ...(specSchema ? { spec: toStructural(specSchema, schema) } : {}),
      ...(statusSchema ? { status: toStructural(statusSchema, schema) } : {}),
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
          additionalPrinterColumns: [
            ...info.printerColumns.map((c) => ({ ...c })),
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}

function onlyRequired(branch: JsonSchema): boolean {
  return Object.keys(branch).every((k) => k === 'required' || (k === 'not' && branch.not !== undefined && Object.keys(branch.not).every((n) => n === 'required')));
}

function inferType(node: JsonSchema): NonNullable<JsonSchema['type']> {
  if (node.properties || node.additionalProperties) return 'object';
  if (node.items) return 'array';
  const first = node.enum?.[0];
  if (typeof first === 'number') return Number.isInteger(first) ? 'integer' : 'number';
  if (typeof first === 'boolean') return 'boolean';
  return 'string';
}
