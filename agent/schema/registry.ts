import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { schemasDir } from '../paths.ts';
import { isCidr, isIp } from '../util/ip.ts';
import type { JsonSchema, PrinterColumn } from './json-schema.ts';

export const group = 'kupenstack.io';
export const version = 'v1alpha1';
export const apiVersion = `${group}/${version}`;

/** Where, inside a manifest, a reference to another manifest sits; the segment '*' means every item of an array. */
export interface RefPath {
  path: string[];
  target: string;
  weak: boolean;
  /**
   * x-kupenstack-ref-objects-only: the reference orders the objects (its target is made first) but not
   * the kinds, so two kinds may refer to each other (a Volume from a VolumeSnapshot of a Volume) and the
   * target's kind is pruned first (the snapshot before any volume).
   */
  objectsOnly: boolean;
}

export interface KindInfo {
  kind: string;
  plural: string;
  scope: 'Namespaced' | 'Cluster';
  shortNames: string[];
  printerColumns: PrinterColumn[];
  file: string;
  schema: JsonSchema;
  refs: RefPath[];
  /** Kinds reconciled before this one in the same namespace (x-kupenstack-after). */
  after: string[];
  /** x-kupenstack-after-via: only the `after` manifests sharing a reference to this kind. */
  afterVia?: string;
  validate: ValidateFunction;
}

export interface SchemaRegistry {
  kinds: Map<string, KindInfo>;
  common: JsonSchema;
  /** Resolves a `$ref` written in the document `from`; returns the target and the document it lives in. */
  resolve: (ref: string, from: JsonSchema) => { schema: JsonSchema; root: JsonSchema };
}

const commonFile = 'common.schema.json';
/** Schemas in schemas/ that are not kinds. */
const notKinds = new Set([commonFile, 'all.schema.json', 'plan.schema.json']);

export function loadSchemaRegistry(dir: string = schemasDir): SchemaRegistry {
  const read = (file: string): JsonSchema => JSON.parse(readFileSync(join(dir, file), 'utf8')) as JsonSchema;
  const common = read(commonFile);
  // strictRequired is off: the `oneOf: [{required: [a]}, {required: [b]}]` idiom names properties defined one level up.
  const ajv = new Ajv2020({
    allErrors: true,
    strictSchema: true,
    strictNumbers: true,
    strictTuples: true,
    strictTypes: false,
    strictRequired: false,
    verbose: true,
    validateFormats: true,
  });
  addFormats.default(ajv, ['ipv4', 'ipv6', 'uuid', 'date-time', 'uri', 'hostname']);
  ajv.addFormat('ip', isIp);
  ajv.addFormat('cidr', isCidr);
  ajv.addFormat('mac', /^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$/);
  for (const keyword of annotationKeywords) ajv.addKeyword({ keyword, schemaType: ['string', 'boolean', 'array', 'object'] });
  ajv.addSchema(common);

  const resolve = (ref: string, from: JsonSchema): { schema: JsonSchema; root: JsonSchema } => {
    const [file, pointer = ''] = ref.split('#');
    const base = file ? (file === commonFile ? common : undefined) : from;
    if (!base) throw new Error(`schema: cannot resolve $ref ${ref}`);
    let node: unknown = base;
    for (const part of pointer.split('/').filter(Boolean)) node = (node as Record<string, unknown>)[decodePointer(part)];
    if (!node || typeof node !== 'object') throw new Error(`schema: $ref ${ref} points nowhere`);
    return { schema: node as JsonSchema, root: base };
  };

  const kinds = new Map<string, KindInfo>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.schema.json') && !notKinds.has(f))
    .sort()) {
    const schema = read(file);
    const kind = schema.title;
    const scope = schema['x-kupenstack-scope'];
    const plural = schema['x-kupenstack-plural'];
    if (!kind || !scope || !plural) throw new Error(`schema: ${file} needs title, x-kupenstack-scope and x-kupenstack-plural`);
    kinds.set(kind, {
      kind,
      plural,
      scope,
      shortNames: schema['x-kupenstack-shortNames'] ?? [],
      printerColumns: schema['x-kupenstack-printerColumns'] ?? [],
      file,
      schema,
      refs: collectRefs(schema, schema, resolve),
      after: schema['x-kupenstack-after'] ?? [],
      ...(schema['x-kupenstack-after-via'] ? { afterVia: schema['x-kupenstack-after-via'] } : {}),
      validate: ajv.compile(schema),
    });
  }
  return { kinds, common, resolve };
}

const annotationKeywords = [
  'x-kupenstack-scope',
  'x-kupenstack-plural',
  'x-kupenstack-shortNames',
  'x-kupenstack-printerColumns',
  'x-kupenstack-ref',
  'x-kupenstack-ref-weak',
  'x-kupenstack-ref-objects-only',
  'x-kupenstack-after',
  'x-kupenstack-after-via',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
];

function decodePointer(part: string): string {
  return part.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Finds every property annotated with x-kupenstack-ref, following $ref, arrays and combinator branches. */
function collectRefs(node: JsonSchema, root: JsonSchema, resolve: SchemaRegistry['resolve'], path: string[] = [], seen = new Set<JsonSchema>()): RefPath[] {
  if (seen.has(node)) return [];
  const target = node['x-kupenstack-ref'];
  // A reference is a leaf: `{name}` for one, an array of them for many.
  if (target)
    return [
      {
        path: node.items ? [...path, '*'] : path,
        target,
        weak: node['x-kupenstack-ref-weak'] === true,
        objectsOnly: node['x-kupenstack-ref-objects-only'] === true,
      },
    ];
  const inner = new Set(seen).add(node);
  const out: RefPath[] = [];
  if (node.$ref) {
    const target = resolve(node.$ref, root);
    out.push(...collectRefs(target.schema, target.root, resolve, path, inner));
  }
  for (const [name, child] of Object.entries(node.properties ?? {})) out.push(...collectRefs(child, root, resolve, [...path, name], inner));
  if (node.items) out.push(...collectRefs(node.items, root, resolve, [...path, '*'], inner));
  for (const branch of [...(node.oneOf ?? []), ...(node.anyOf ?? []), ...(node.allOf ?? [])]) out.push(...collectRefs(branch, root, resolve, path, inner));
  return dedupeRefs(out);
}

function dedupeRefs(refs: RefPath[]): RefPath[] {
  const seen = new Map<string, RefPath>();
  for (const ref of refs) seen.set(`${ref.path.join('.')}>${ref.target}`, ref);
  return [...seen.values()];
}

let shared: SchemaRegistry | undefined;
/** The schemas are files of the agent itself: one compiled registry per process (compiling takes about a second). */
export function sharedSchemaRegistry(): SchemaRegistry {
  shared ??= loadSchemaRegistry();
  return shared;
}
