import type { SchemaRegistry } from './registry.ts';
import type { JsonSchema } from './json-schema.ts';

const header = `// Generated from schemas/*.schema.json by \`npm run generate\`. Do not edit: change the schema and regenerate.
`;

/** TypeScript declarations for every kind, from the schemas (the single source of truth). */
export function typescriptFor(registry: SchemaRegistry): string {
  const out: string[] = [header];
  const commonName = (def: string): string => pascal(def);
  const typeOf = (node: JsonSchema, root: JsonSchema, localPrefix: string, indent: string): string => {
    if (node.$ref) {
      const [file, pointer = ''] = node.$ref.split('#');
      const def = pointer.split('/').pop() ?? '';
      return file ? commonName(def) : `${localPrefix}${pascal(def)}`;
    }
    if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
    switch (node.type) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'array': {
        const item = node.items ? typeOf(node.items, root, localPrefix, indent) : 'unknown';
        return /[|&]/.test(item) ? `(${item})[]` : `${item}[]`;
      }
      default:
        break;
    }
    if (node.properties) return objectLiteral(node, root, localPrefix, indent);
    if (node.additionalProperties && typeof node.additionalProperties === 'object')
      return `Record<string, ${typeOf(node.additionalProperties, root, localPrefix, indent)}>`;
    if (node.type === 'object' || node['x-kubernetes-preserve-unknown-fields']) return 'Record<string, unknown>';
    if (node['x-kubernetes-int-or-string']) return 'number | string';
    return 'unknown';
  };
  const objectLiteral = (node: JsonSchema, root: JsonSchema, localPrefix: string, indent: string): string => {
    const required = new Set(node.required ?? []);
    const inner = `${indent}  `;
    const lines = Object.entries(node.properties ?? {}).map(([key, child]) => {
      const doc = child.description ? docComment(inner, child.description) : '';
      const name = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key);
      return `${doc}${inner}${name}${required.has(key) ? '' : '?'}: ${typeOf(child, root, localPrefix, inner)};`;
    });
    return `{\n${lines.join('\n')}\n${indent}}`;
  };
  const declare = (name: string, node: JsonSchema, root: JsonSchema, localPrefix: string): void => {
    const doc = node.description ? docComment('', node.description) : '';
    out.push(`${doc}export type ${name} = ${typeOf(node, root, localPrefix, '')};\n`);
  };

  for (const [def, node] of Object.entries(registry.common.$defs ?? {})) declare(commonName(def), node, registry.common, '');
  const kinds = [...registry.kinds.values()];
  for (const info of kinds) {
    const schema = info.schema;
    for (const [def, node] of Object.entries(schema.$defs ?? {})) declare(`${info.kind}${pascal(def)}`, node, schema, info.kind);
    const spec = schema.properties?.spec;
    const status = schema.properties?.status;
    if (spec) declare(`${info.kind}Spec`, spec, schema, info.kind);
    if (status) declare(`${info.kind}Status`, status, schema, info.kind);
    const metadata = schema.properties?.metadata;
    const metaType = metadata ? typeOf(metadata, schema, info.kind, '  ') : 'Record<string, unknown>';
    const body = [
      `export interface ${info.kind} {`,
      `  apiVersion: 'kupenstack.io/v1alpha1';`,
      `  kind: '${info.kind}';`,
      `  metadata: ${metaType};`,
      `  spec: ${spec ? `${info.kind}Spec` : 'Record<string, unknown>'};`,
      `  status?: ${status ? `${info.kind}Status` : 'Record<string, unknown>'};`,
      '}',
    ];
    out.push(`${docComment('', schema.description ?? info.kind)}${body.join('\n')}\n`);
  }
  // One member a line: the unions grow with each kind, and no generated line may pass 200 characters.
  out.push(`export type KindName =\n${kinds.map((k) => `  | '${k.kind}'`).join('\n')};\n`);
  out.push(`export type AnyKind =\n${kinds.map((k) => `  | ${k.kind}`).join('\n')};\n`);
  out.push(`export interface SpecByKind {\n${kinds.map((k) => `  ${k.kind}: ${k.kind}Spec;`).join('\n')}\n}\n`);
  out.push(SPEC_OF);
  return out.join('\n');
}

function pascal(name: string): string {
  return name.replace(/(^|[-_\s])([a-zA-Z0-9])/g, (_, _sep: string, c: string) => c.toUpperCase());
}

/** A doc comment at `indent`, wrapped at 120 columns: a schema's description may be a paragraph. */
function docComment(indent: string, text: string): string {
  const flat = text.replace(/\*\//g, '* /').replace(/\s*\n\s*/g, ' ');
  if (indent.length + flat.length + 7 <= 120) return `${indent}/** ${flat} */\n`;
  const lines: string[] = [];
  let line = '';
  for (const word of flat.split(' ')) {
    if (line && indent.length + 3 + line.length + 1 + word.length > 120) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`).join('\n')}\n${indent} */\n`;
}

/**
 * The typed accessor every reader of a spec uses instead of a cast: the kind is checked here, the shape is
 * the kind's schema, which every Manifest passed (validate/) and every custom resource passed at admission.
 */
const SPEC_OF = `/**
 * A manifest's (or custom resource's) spec as its kind's type. The kind is checked here; the shape was checked by
 * the kind's schema (validate/ for a manifest, the CRD at admission for a custom resource).
 */
export function specOf<K extends KindName>(m: { kind: string; spec?: unknown }, kind: K): SpecByKind[K] {
  if (m.kind !== kind) throw new TypeError(\`a \${m.kind} is not a \${kind}: its spec is not a \${kind}Spec\`);
  return m.spec as SpecByKind[K];
}
`;
