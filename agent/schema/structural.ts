import type { JsonSchema } from './json-schema.ts';

/** Keywords of apiextensions.k8s.io/v1 JSONSchemaProps that a CRD may use. */
const allowedKeywords = new Set([
  'description',
  'type',
  'format',
  'title',
  'default',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'multipleOf',
  'enum',
  'maxProperties',
  'minProperties',
  'required',
  'items',
  'allOf',
  'oneOf',
  'anyOf',
  'not',
  'properties',
  'additionalProperties',
  'example',
  'nullable',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
]);
const validTypes = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const forbiddenInJunctors = ['description', 'type', 'default', 'additionalProperties', 'nullable'];

/**
 * The rules kube-apiserver enforces on a CRD's openAPIV3Schema ("structural
 * schema"), checked offline. Returns one message per violation, with its path.
 */
export function structuralProblems(root: JsonSchema): string[] {
  const problems: string[] = [];
  const visit = (node: JsonSchema, path: string, inJunctor: boolean): void => {
    for (const key of Object.keys(node)) if (!allowedKeywords.has(key)) problems.push(`${path}: keyword "${key}" is not allowed in a CRD schema`);
    const preserves = node['x-kubernetes-preserve-unknown-fields'] === true || node['x-kubernetes-int-or-string'] === true;
    if (inJunctor) {
      for (const key of forbiddenInJunctors) if (key in node) problems.push(`${path}: "${key}" must not appear inside allOf/anyOf/oneOf/not`);
    } else if (!node.type && !preserves) {
      problems.push(`${path}: every node needs a type`);
    }
    if (node.type && !validTypes.has(node.type)) problems.push(`${path}: invalid type ${String(node.type)}`);
    if (node.properties && node.additionalProperties !== undefined) problems.push(`${path}: properties and additionalProperties are mutually exclusive`);
    if (node.additionalProperties === false) problems.push(`${path}: additionalProperties: false is not allowed (unknown fields are pruned)`);
    if (typeof node.exclusiveMinimum === 'number' || typeof node.exclusiveMaximum === 'number')
      problems.push(`${path}: exclusiveMinimum/Maximum must be booleans in OpenAPI v3.0`);
    if (node.required && node.properties && !inJunctor) {
      for (const r of node.required) if (!(r in node.properties)) problems.push(`${path}: required field "${r}" is not among the properties`);
    }
    for (const [k, child] of Object.entries(node.properties ?? {})) visit(child, `${path}.${k}`, inJunctor);
    if (node.items) visit(node.items, `${path}[*]`, inJunctor);
    if (node.additionalProperties && typeof node.additionalProperties === 'object') visit(node.additionalProperties, `${path}{*}`, inJunctor);
    for (const junctor of ['allOf', 'anyOf', 'oneOf'] as const) {
      node[junctor]?.forEach((branch, i) => {
        visit(branch, `${path}.${junctor}[${i}]`, true);
        for (const field of [...(branch.required ?? []), ...Object.keys(branch.properties ?? {})]) {
          if (!node.properties || !(field in node.properties)) problems.push(`${path}.${junctor}[${i}]: "${field}" must also be specified outside the junctor`);
        }
      });
    }
    if (node.not) visit(node.not, `${path}.not`, true);
  };
  visit(root, '', false);
  const metadata = root.properties?.metadata;
  if (metadata && Object.keys(metadata).some((k) => k !== 'type' && k !== 'description'))
    problems.push('.metadata: only name and generateName restrictions are allowed; leave metadata as {type: object}');
  return problems;
}
