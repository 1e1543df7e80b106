import jsyaml from 'js-yaml';
import { parseAllDocuments, type Document, type YAMLError } from 'yaml';
import type { Diagnostic } from '../diagnostic.ts';
import type { SourceDocument } from '../model/manifest.ts';
import { LineIndex, positionIn } from './document.ts';
import type { ManifestFile } from './files.ts';

/** Aliases are expanded when the document becomes a value; this bounds "billion laughs" files. */
const maxAliasCount = 100;
const emptyFile = 'the file holds no manifest; add one or delete the file';
const notObject = 'a manifest must be a mapping with apiVersion, kind, metadata and spec';
const anchor = /(^|[\s[{,:-])&\S/m;
/** An explicit tag (`!!float 1`): js-yaml and yaml resolve some differently, so only the precise parser reads them. */
const tag = /(^|[\s[{,:-])!/m;

/** The precise parser's options: YAML 1.2 core schema, duplicate keys and other ambiguities are errors. */
export const preciseOptions = { uniqueKeys: true, strict: true, prettyErrors: false, keepSourceTokens: false } as const;

/**
 * js-yaml is about ten times faster than `yaml` but keeps no positions and does
 * not bound aliases; it reads the common case (well-formed, no anchors, tags
 * or tabs), and anything else takes the precise path. The core schema keeps values
 * YAML 1.2 plain (no timestamps, no merge keys), the same as the precise parser;
 * test/unit/yaml-parsers.test.ts proves both give the same documents over every
 * manifest the tests and benchmarks use.
 */
export function fastParse(text: string): unknown[] | undefined {
  if (anchor.test(text) || tag.test(text) || text.includes('\t')) return undefined;
  try {
    return jsyaml.loadAll(text, null, { schema: jsyaml.CORE_SCHEMA });
  } catch {
    return undefined;
  }
}

/**
 * Parses one manifest file (multi-document YAML, or JSON, which YAML 1.2 reads
 * too) into documents with positions. A document with a syntax error is
 * reported and dropped; the others of the file are still returned so every
 * error of a revision is found in one pass.
 */
export function parseManifestFile(input: ManifestFile): { documents: SourceDocument[]; diagnostics: Diagnostic[] } {
  const { file, text } = input;
  const lines = new LineIndex(text);
  const diagnostics: Diagnostic[] = [];
  const documents: SourceDocument[] = [];
  const problem = (code: string, offset: number, message: string): void => {
    const { line, column } = lines.at(offset);
    diagnostics.push({ code, file, line, column, kind: '', name: '', path: '', message });
  };

  if (file.toLowerCase().endsWith('.json')) {
    // YAML reads JSON too, but also accepts what JSON does not (trailing commas, comments).
    const error = jsonSyntaxError(text);
    if (error) {
      problem('json.syntax', error.offset, `${error.message}; fix the JSON syntax here`);
      return { documents, diagnostics };
    }
  }
  const fast = fastParse(text);
  if (fast) {
    // Positions are only needed for errors: the precise parse happens then, once per file.
    let precise: Document[] | undefined;
    const positionOf =
      (index: number): SourceDocument['position'] =>
      (path, at) => {
        precise ??= parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false }) as Document[];
        const doc = precise[index];
        return doc ? positionIn(doc, lines, path, at) : { line: 1, column: 1 };
      };
    fast.forEach((value, index) => {
      if (value === null || value === undefined) return;
      if (typeof value !== 'object' || Array.isArray(value)) {
        diagnostics.push({ code: 'document.not-object', file, ...positionOf(index)([]), kind: '', name: '', path: '', message: notObject });
        return;
      }
      documents.push({ file, index, value, position: positionOf(index) });
    });
    if (documents.length === 0 && diagnostics.length === 0) problem('file.empty', 0, emptyFile);
    return { documents, diagnostics };
  }
  const parsed = parseAllDocuments(text, preciseOptions);
  if (!Array.isArray(parsed)) {
    // An empty stream comes back as a single EmptyStream object.
    problem('file.empty', 0, emptyFile);
    return { documents, diagnostics };
  }
  let index = 0;
  let nonEmpty = 0;
  for (const doc of parsed) {
    const docIndex = index++;
    if (doc.errors.length > 0) {
      nonEmpty++;
      for (const error of doc.errors) problem(yamlCode(error), error.pos[0], yamlMessage(error));
      continue;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount });
    } catch (err) {
      nonEmpty++;
      problem(
        'yaml.aliases',
        doc.range[0],
        `the document expands too many aliases (${err instanceof Error ? err.message : String(err)}); write the values out`,
      );
      continue;
    }
    if (value === null || value === undefined) continue; // an empty document between `---` separators
    nonEmpty++;
    if (typeof value !== 'object' || Array.isArray(value)) {
      problem('document.not-object', doc.contents?.range?.[0] ?? doc.range[0], notObject);
      continue;
    }
    documents.push({ file, index: docIndex, value, position: positioner(doc, lines) });
  }
  if (nonEmpty === 0) problem('file.empty', 0, emptyFile);
  return { documents, diagnostics };
}

function positioner(doc: Document, lines: LineIndex): SourceDocument['position'] {
  return (path, at) => positionIn(doc, lines, path, at);
}

function yamlCode(error: YAMLError): string {
  switch (error.code) {
    case 'DUPLICATE_KEY':
      return 'yaml.duplicate-key';
    case 'TAB_AS_INDENT':
      return 'yaml.tab-indent';
    default:
      return 'yaml.syntax';
  }
}

function yamlMessage(error: YAMLError): string {
  const first = error.message.split('\n')[0] ?? error.message;
  const text = first.replace(/ at line \d+, column \d+:?$/, '');
  switch (error.code) {
    case 'DUPLICATE_KEY':
      return `${text}; each key may appear once in a mapping, remove one of them`;
    case 'TAB_AS_INDENT':
      return `${text}; indent YAML with spaces`;
    default:
      return `${text}; fix the YAML syntax here`;
  }
}

/** JSON.parse's verdict, with the offset it reports (Node names it as "position N"). */
function jsonSyntaxError(text: string): { offset: number; message: string } | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const offset = /position (\d+)/.exec(message)?.[1];
    return { offset: offset ? Number(offset) : 0, message: message.replace(/ in JSON at position \d+.*$/, '').replace(/ \(line \d+ column \d+\)$/, '') };
  }
}
