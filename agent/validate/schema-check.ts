import type { ErrorObject } from 'ajv';
import type { Diagnostic } from '../diagnostic.ts';
import { addressOf, type Manifest, type ManifestMetadata, type SourceDocument } from '../model/manifest.ts';
import { apiVersion, group, type KindInfo, type SchemaRegistry } from '../schema/registry.ts';
import type { JsonSchema } from '../schema/json-schema.ts';
import { formatPath, pointerToPath } from './json-path.ts';
import { closest } from './suggest.ts';

/**
 * Checks one document against the schema of its kind. Returns the manifest
 * when it is valid, and every problem found (not only the first) otherwise.
 */
export function checkDocument(doc: SourceDocument, registry: SchemaRegistry): { manifest?: Manifest; diagnostics: Diagnostic[] } {
  const value = doc.value as Record<string, unknown>;
  const kindName = typeof value.kind === 'string' ? value.kind : '';
  const metadata = isObject(value.metadata) ? value.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const diagnostics: Diagnostic[] = [];
  const report = (code: string, path: (string | number)[], message: string, at: 'key' | 'value' = 'value'): void => {
    const { line, column } = doc.position(path, at);
    diagnostics.push({ code, file: doc.file, line, column, kind: kindName, name, path: formatPath(path), message });
  };

  if (value.apiVersion === undefined) report('apiversion.missing', [], `add "apiVersion: ${apiVersion}"`);
  else if (value.apiVersion !== apiVersion) {
    const hint =
      typeof value.apiVersion === 'string' && value.apiVersion.startsWith(`${group}/`) ? 'this version is not served' : 'this is not a KupenStack manifest';
    report('apiversion.unknown', ['apiVersion'], `${JSON.stringify(value.apiVersion)}: ${hint}; use "${apiVersion}" (or add the file to .kupenstackignore)`);
  }
  const info = registry.kinds.get(kindName);
  if (value.kind === undefined) report('kind.missing', [], `add "kind:", one of ${[...registry.kinds.keys()].join(', ')}`);
  else if (!info) {
    const guess = typeof value.kind === 'string' ? closest(value.kind, registry.kinds.keys()) : undefined;
    report(
      'kind.unknown',
      ['kind'],
      `unknown kind ${JSON.stringify(value.kind)}; ${guess ? `did you mean "${guess}"? ` : ''}known kinds: ${[...registry.kinds.keys()].join(', ')}`,
    );
  }
  if (!info || diagnostics.length > 0) return { diagnostics };

  if (!info.validate(value)) {
    for (const error of relevantErrors(info.validate.errors ?? [])) {
      const mapped = mapError(error, info);
      report(mapped.code, mapped.path, mapped.message, mapped.at);
    }
    return { diagnostics };
  }
  const meta = metadata as unknown as ManifestMetadata;
  return {
    diagnostics,
    manifest: {
      apiVersion,
      kind: info.kind,
      metadata: meta,
      spec: value.spec as Record<string, unknown>,
      source: doc,
      address: addressOf(info.kind, meta.name, meta.namespace),
    },
  };
}

/** Errors inside the branches of oneOf/anyOf only explain the combinator's own error; keep that one. */
function relevantErrors(errors: ErrorObject[]): ErrorObject[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    if (/\/(oneOf|anyOf)\/\d+\//.test(e.schemaPath)) return false;
    const key = `${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

interface Mapped {
  code: string;
  path: (string | number)[];
  message: string;
  at: 'key' | 'value';
}

/** One schema error as a diagnostic a user can act on: what is wrong, where, and the fix; one function per family of keywords. */
function mapError(error: ErrorObject, info: KindInfo): Mapped {
  const path = pointerToPath(error.instancePath);
  const params: Record<string, unknown> = error.params;
  const shown = JSON.stringify(error.data);
  switch (error.keyword) {
    case 'required':
      return missingField(error, path, info);
    case 'additionalProperties':
      return unknownField(error, path, info);
    case 'type':
      return { code: 'schema.type', path, at: 'value', message: `must be ${article(String(params.type))}, not ${describe(error.data)}` };
    case 'enum':
      return {
        code: 'schema.enum',
        path,
        at: 'value',
        message: `${shown} is not allowed; use one of: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      };
    case 'pattern':
    case 'maxLength':
    case 'minLength':
      return badText(error, path);
    case 'format':
      return { code: 'schema.format', path, at: 'value', message: `${shown} is not a valid ${String(params.format)}${formatExample(String(params.format))}` };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
    case 'minItems':
    case 'maxItems':
    case 'minProperties':
    case 'maxProperties':
      return outOfRange(error, path);
    case 'oneOf':
    case 'anyOf':
    case 'not':
      return badForm(error, path);
    default:
      return { code: 'schema.invalid', path, at: 'value', message: error.message ?? 'invalid value' };
  }
}

/** `required`: a missing field; a missing namespace says the kind is namespaced. */
function missingField(error: ErrorObject, path: (string | number)[], info: KindInfo): Mapped {
  const params: Record<string, unknown> = error.params;
  const missing = String(params.missingProperty);
  if (atMetadata(path) && missing === 'namespace')
    return {
      code: 'namespace.missing',
      path: [...path, missing],
      at: 'key',
      message: `${info.kind} is namespaced: set metadata.namespace (the namespace is the OpenStack project)`,
    };
  return { code: 'schema.required', path: [...path, missing], at: 'key', message: `the required field "${missing}" is missing; add it` };
}

/** `additionalProperties`: a field the schema does not have, with the closest it does; a namespace where none belongs. */
function unknownField(error: ErrorObject, path: (string | number)[], info: KindInfo): Mapped {
  const params: Record<string, unknown> = error.params;
  const extra = String(params.additionalProperty);
  if (atMetadata(path) && extra === 'namespace')
    return { code: 'namespace.forbidden', path: [...path, extra], at: 'key', message: `${info.kind} is cluster-scoped: remove metadata.namespace` };
  if (extra === 'namespace' && isRefPath(path))
    return {
      code: 'ref.cross-namespace',
      path: [...path, extra],
      at: 'key',
      message:
        'references point to manifests in the same namespace only; remove "namespace" and declare the target in this namespace (or import the OpenStack object by id or filter)',
    };
  const parent: JsonSchema | undefined = error.parentSchema;
  const allowed = Object.keys(parent?.properties ?? {});
  const guess = closest(extra, allowed);
  return {
    code: 'schema.unknown-field',
    path: [...path, extra],
    at: 'key',
    message: `unknown field "${extra}"; ${guess ? `did you mean "${guess}"? ` : ''}allowed here: ${allowed.join(', ') || 'none'}`,
  };
}

/** `pattern`, `maxLength`, `minLength`: a metadata name or namespace gets the naming rule; other strings their form or range. */
function badText(error: ErrorObject, path: (string | number)[]): Mapped {
  const shown = JSON.stringify(error.data);
  if (atMetadataField(path, 'name') || atMetadataField(path, 'namespace')) {
    const field = String(path[path.length - 1]);
    return {
      code: `${field}.invalid`,
      path,
      at: 'value',
      message:
        `${shown} is not a valid ${field}: use lower-case letters, digits and "-", starting and ending with a letter or digit, ` +
        `${field === 'namespace' ? 'at most 63 characters (a DNS label)' : 'at most 253 characters (a DNS subdomain)'}`,
    };
  }
  if (error.keyword !== 'pattern') return outOfRange(error, path);
  const parent: JsonSchema | undefined = error.parentSchema;
  const params: Record<string, unknown> = error.params;
  const described = parent?.description ? ` (${parent.description})` : '';
  return { code: 'schema.pattern', path, at: 'value', message: `${shown} does not match the expected form ${String(params.pattern)}${described}` };
}

/** A bound (number, length, count) not met, with the field's description. */
function outOfRange(error: ErrorObject, path: (string | number)[]): Mapped {
  const shown = JSON.stringify(error.data);
  const parent: JsonSchema | undefined = error.parentSchema;
  return {
    code: 'schema.range',
    path,
    at: 'value',
    message: `${shown.length > 60 ? 'the value' : shown} ${error.message ?? 'is out of range'}; change it${about(parent)}`,
  };
}

/** `oneOf`, `anyOf`, `not`: which of the allowed forms to set, or which fields exclude each other. */
function badForm(error: ErrorObject, path: (string | number)[]): Mapped {
  if (error.keyword === 'not') {
    const names = (error.schema as JsonSchema | undefined)?.required ?? [];
    return {
      code: 'schema.conflict',
      path,
      at: 'key',
      message: names.length ? `the fields ${names.join(' and ')} cannot be set together; keep one` : 'this combination of fields is not allowed',
    };
  }
  const forms = describeBranches(error.schema);
  if (error.keyword === 'oneOf') {
    const params: Record<string, unknown> = error.params;
    const several = Array.isArray(params.passingSchemas);
    return {
      code: 'schema.one-of',
      path,
      at: 'key',
      message: forms
        ? `${several ? 'more than one form is set' : 'no allowed form is set'}: set exactly one of ${forms}`
        : 'matches none or several of the allowed forms; check the field against the schema',
    };
  }
  const branches = Array.isArray(error.schema) ? (error.schema as JsonSchema[]) : [];
  if (branches.length > 0 && branches.every((b) => b.not?.required && !b.required)) {
    const fields = branches.flatMap((b) => b.not?.required ?? []);
    return { code: 'schema.conflict', path, at: 'key', message: `${fields.join(' and ')} cannot be set together; keep one` };
  }
  return { code: 'schema.any-of', path, at: 'key', message: forms ? `set ${forms}` : 'matches none of the allowed forms' };
}

/** `import`, or `vcpus + ram + disk` — the forms a combinator accepts, for a human. */
function describeBranches(schema: unknown): string {
  if (!Array.isArray(schema)) return '';
  const forms = (schema as JsonSchema[]).map((b) => (b.required ?? []).join(' + ')).filter(Boolean);
  return forms.length === (schema as unknown[]).length ? forms.map((f) => `"${f}"`).join(' or ') : '';
}

function isRefPath(path: (string | number)[]): boolean {
  const last = path[path.length - 1];
  const before = path[path.length - 2];
  return (typeof last === 'string' && last.endsWith('Ref')) || (typeof last === 'number' && typeof before === 'string' && before.endsWith('Refs'));
}

function atMetadata(path: (string | number)[]): boolean {
  return path.length === 1 && path[0] === 'metadata';
}

function atMetadataField(path: (string | number)[], field: string): boolean {
  return path.length === 2 && path[0] === 'metadata' && path[1] === field;
}

/** The field's own description, so the fix is in the message. */
function about(schema: JsonSchema | undefined): string {
  const text = schema?.description?.replace(/\s+/g, ' ').trim();
  return text ? ` (${text.length > 160 ? `${text.slice(0, 157)}...` : text})` : '';
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}

const formatExamples: Record<string, string> = {
  cidr: ' (e.g. 10.0.0.0/24 or fd00::/64)',
  ip: ' (e.g. 10.0.0.1 or fd00::1)',
  ipv4: ' (e.g. 10.0.0.1)',
  ipv6: ' (e.g. fd00::1)',
  mac: ' (e.g. fa:16:3e:00:00:01)',
  uuid: ' (e.g. 3f2c1a9e-5b7d-4c1e-9a2b-1c2d3e4f5a6b)',
  'date-time': ' (RFC 3339, e.g. 2026-01-31T12:00:00Z)',
  uri: ' (an absolute URL)',
};

function formatExample(format: string): string {
  return formatExamples[format] ?? '';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
