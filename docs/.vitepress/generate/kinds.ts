import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { banner, cell, code, text } from './markdown.ts';
import { namespaceSyncInfo } from '../../../agent/schema/namespace-sync.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';

type Schema = {
  title?: string;
  description?: string;
  type?: string | string[];
  $ref?: string;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  $defs?: Record<string, Schema>;
  'x-kupenstack-scope'?: string;
  'x-kupenstack-shortNames'?: string[];
};

interface Row {
  path: string;
  type: string;
  required: boolean;
  description: string;
}

const root = join(import.meta.dirname, '../../../schemas');

function load(file: string): Schema {
  return JSON.parse(readFileSync(join(root, file), 'utf8')) as Schema;
}

/** The schema files read so far, and the one a local `#/$defs/x` reference points into. */
interface Files {
  docs: Map<string, Schema>;
  base: string;
}

/** `common.schema.json#/$defs/x` (or `#/$defs/x` in the same file) → that definition, and the file it is in. */
function resolve(ref: string, files: Files): { schema: Schema; files: Files } {
  const [named, pointer = ''] = ref.split('#');
  const file = named || files.base;
  const doc = files.docs.get(file) ?? load(file);
  files.docs.set(file, doc);
  const schema = pointer
    .split('/')
    .filter(Boolean)
    .reduce<unknown>((at, key) => (at as Record<string, unknown>)[key], doc) as Schema;
  return { schema, files: { docs: files.docs, base: file } };
}

/** A reference as seen from anywhere: `file#pointer`. */
function absolute(ref: string, files: Files): string {
  return ref.startsWith('#') ? `${files.base}${ref}` : ref;
}

/** The schema with its $ref and allOf merged in: the field's own words win over the definition's. */
function flatten(s: Schema, files: Files): Schema {
  let out: Schema = { ...s };
  if (s.$ref) {
    const at = resolve(s.$ref, files);
    const target = flatten(at.schema, at.files);
    const { $ref: _drop, ...own } = s;
    void _drop;
    out = { ...target, ...own, properties: { ...target.properties, ...own.properties }, required: [...(target.required ?? []), ...(own.required ?? [])] };
  }
  for (const part of s.allOf ?? []) {
    const p = flatten(part, files);
    out = { ...p, ...out, properties: { ...p.properties, ...out.properties }, required: [...(p.required ?? []), ...(out.required ?? [])] };
  }
  if (out.properties && Object.keys(out.properties).length === 0) delete out.properties;
  return out;
}

function typeOf(s: Schema, files: Files): string {
  const variants = [...new Set((s.oneOf ?? s.anyOf ?? []).map((x) => typeOf(flatten(x, files), files)))].filter((t) => t !== 'any');
  if (variants.length > 0 && !s.type) return variants.join(' or ');
  const t = Array.isArray(s.type) ? s.type.join(' or ') : (s.type ?? (s.properties ? 'object' : s.enum ? 'enum' : 'any'));
  if (t === 'array' && s.items) return `${typeOf(flatten(s.items, files), files)}[]`;
  if (t === 'object' && !s.properties && typeof s.additionalProperties === 'object') return `map of ${typeOf(flatten(s.additionalProperties, files), files)}`;
  return t;
}

/** What a reader needs besides the description: enums, defaults, formats and bounds. */
function facts(s: Schema): string {
  const out: string[] = [];
  if (s.enum) out.push(`One of: ${s.enum.map((v) => code(JSON.stringify(v))).join(', ')}.`);
  if (s.const !== undefined) out.push(`Always ${code(JSON.stringify(s.const))}.`);
  if (s.default !== undefined) out.push(`Default: ${code(JSON.stringify(s.default))}.`);
  if (s.format) out.push(`Format: ${s.format}.`);
  if (s.pattern) out.push(`Pattern: ${code(s.pattern)}.`);
  for (const [k, word] of [['minimum', 'Minimum'], ['maximum', 'Maximum'], ['minLength', 'Minimum length'], ['maxLength', 'Maximum length'], ['minItems', 'Minimum items'], ['maxItems', 'Maximum items']] as const) {
    if (s[k] !== undefined) out.push(`${word}: ${s[k]}.`);
  }
  return out.join(' ');
}

/** Every field under `s`, depth-first, `a.b[].c` paths; a definition met again on its own path stops there. */
function fields(s: Schema, path: string, from: Files, seen: readonly string[]): Row[] {
  const rows: Row[] = [];
  const flat = flatten(s, from);
  // The fields of a referenced definition refer on from its own file.
  const files = s.$ref ? resolve(s.$ref, from).files : from;
  const variants = (flat.oneOf ?? flat.anyOf ?? []).map((v) => flatten(v, files));
  const props = { ...flat.properties, ...Object.assign({}, ...variants.map((v) => v.properties ?? {})) } as Record<string, Schema>;
  const required = new Set(flat.required ?? []);
  for (const [name, raw] of Object.entries(props)) {
    if (raw.$ref && seen.includes(absolute(raw.$ref, files))) continue;
    const f = flatten(raw, files);
    const p = path ? `${path}.${name}` : name;
    const description = [cell(raw.description ?? f.description ?? ''), cell(facts(f))].filter(Boolean).join(' ');
    const inner = raw.$ref ? resolve(raw.$ref, files).files : files;
    rows.push({ path: p, type: typeOf(f, inner), required: required.has(name), description });
    const next = [...seen, ...(raw.$ref ? [absolute(raw.$ref, files)] : [])];
    if (f.properties || f.oneOf || f.anyOf) rows.push(...fields(f, p, inner, next));
    const items = f.items;
    const item = items ? flatten(items, inner) : undefined;
    if (items && item && (item.properties || item.oneOf || item.anyOf)) {
      const itemFiles = items.$ref ? resolve(items.$ref, inner).files : inner;
      rows.push(...fields(item, `${p}[]`, itemFiles, [...next, ...(items.$ref ? [absolute(items.$ref, inner)] : [])]));
    }
  }
  return rows;
}

function table(rows: Row[]): string[] {
  return ['| Field | Type | Required | Description |', '|---|---|---|---|', ...rows.map((r) => `| ${code(r.path)} | ${cell(r.type)} | ${r.required ? 'yes' : ''} | ${r.description} |`), ''];
}

/** The kinds' schema files (those that describe a manifest kind), sorted by kind. */
export function kindSchemas(): { file: string; kind: string }[] {
  return readdirSync(root)
    .filter((f) => f.endsWith('.schema.json'))
    .map((file) => ({ file, schema: load(file) }))
    .filter((x) => x.schema['x-kupenstack-scope'] !== undefined)
    .map((x) => ({ file: x.file, kind: x.schema.title! }))
    .sort((a, b) => (a.kind < b.kind ? -1 : 1));
}

/** Kinds with no file of their own, derived from another kind's schema (the NamespaceSync from the Sync's: agent/schema/namespace-sync.ts). */
export function derivedKinds(): { file: string; kind: string; schema: Schema }[] {
  const info = namespaceSyncInfo(loadSchemaRegistry(root));
  return [{ file: info.file, kind: info.kind, schema: info.schema }];
}

/** docs/reference/kinds/<kind>.md: every field of the kind's spec (and status) with type, required, description, enums and defaults. */
export function kindPage(file: string, schema: Schema = load(file)): string {
  const files: Files = { docs: new Map(), base: file };
  const props = schema.properties ?? {};
  const short = schema['x-kupenstack-shortNames'] ?? [];
  const out = [
    banner(`schemas/${file}`),
    `# ${schema.title}`,
    '',
    text(schema.description ?? ''),
    '',
    `${code('apiVersion: kupenstack.io/v1alpha1')}, ${code(`kind: ${schema.title}`)}; ${schema['x-kupenstack-scope'] === 'Namespaced' ? 'namespaced (the namespace is the OpenStack project)' : 'cluster-scoped'}` +
      `${short.length > 0 ? `; short names ${short.map((s) => code(s)).join(', ')}` : ''}. JSON Schema: ${code(`schemas/${file}`)}.`,
    '',
  ];
  for (const part of ['metadata', 'spec', 'status']) {
    const s = props[part];
    if (!s) continue;
    out.push(`## ${part}`, '', ...(s.description ? [text(s.description), ''] : []), ...table(fields(s, part, files, [])));
  }
  return out.join('\n').trimEnd() + '\n';
}

/** docs/reference/kinds/index.md: one line per kind. */
export function kindsIndex(): string {
  const kinds = [...kindSchemas().map(({ file, kind }) => ({ kind, schema: load(file) })), ...derivedKinds()].sort((a, b) => (a.kind < b.kind ? -1 : 1));
  const rows = kinds.map(({ kind, schema }) => `| [${kind}](./${kind.toLowerCase()}.md) | ${cell(schema.description ?? '')} |`);
  return [banner('schemas/'), '# Kinds', '', 'Every kind a manifest can declare, generated from the JSON Schemas in `schemas/`.', '', '| Kind | What it is |', '|---|---|', ...rows, ''].join('\n');
}
