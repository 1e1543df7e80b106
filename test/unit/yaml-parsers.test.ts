import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { fastParse, preciseOptions } from '../../agent/load/parse.ts';
import { manifests as applyBenchManifests } from '../bench/apply.ts';
import { writeTenants } from '../bench/plan.ts';
import { writeRevision } from '../bench/validate.ts';
import { base, cases } from '../corpus/cases.ts';

// load/parse.ts reads a file with js-yaml when it can (fast) and with `yaml`
// otherwise (positions, alias bounds). Two parsers must not mean two meanings:
// wherever the fast path answers, the precise parser must accept the file and
// give the very same documents.
const root = join(import.meta.dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'ks-yaml-diff-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    if (e.isFile() && keep(e.name) && !path.includes('node_modules')) out.push(path);
  }
  return out.sort();
}

const manifestFile = (name: string): boolean => /\.(ya?ml|json)$/i.test(name);

/** Every manifest text the tests and benchmarks use, by a name for the failure message. */
function corpus(): [string, string][] {
  const texts: [string, string][] = [];
  for (const dir of ['repo-template', 'test', 'schemas']) for (const f of filesUnder(join(root, dir), manifestFile)) texts.push([relative(root, f), readFileSync(f, 'utf8')]);
  for (const [file, text] of Object.entries(base)) texts.push([`corpus base ${file}`, text]);
  for (const c of cases) for (const [file, text] of Object.entries(c.files)) if (typeof text === 'string') texts.push([`corpus "${c.name}" ${file}`, text]);
  writeRevision(join(scratch, 'validate'), 600);
  writeTenants(join(scratch, 'plan-base'), 600, false);
  writeTenants(join(scratch, 'plan-head'), 600, true);
  for (const f of filesUnder(scratch, manifestFile)) texts.push([`bench ${relative(scratch, f)}`, readFileSync(f, 'utf8')]);
  texts.push(['bench apply', applyBenchManifests('bench', 1)]);
  return texts;
}

/** Scalars where YAML 1.1, 1.2 and the two libraries have been known to part ways. */
const cornerCases = [
  'a: yes\nb: no\nc: on\nd: off\ne: y\nf: True\ng: FALSE\n',
  'a: 010\nb: 0o10\nc: 0x1F\nd: 1_000\ne: +12\nf: -0\ng: 1e3\nh: .5\ni: .inf\nj: -.Inf\nk: .NaN\n',
  'a: ~\nb: null\nc: Null\nd:\ne: ""\n',
  'a: 2026-11-23\nb: 2026-11-23T14:00:00Z\nc: 12:30:00\nd: 1:20\n',
  'version: "0.6"\ntag: 0.6\nmtu: 1450\ncidr: 10.0.0.0/24\nip: 2001:db8::1\nmac: fa:16:3e:00:00:01\n',
  'a: !!str 12\nb: !!int "12"\nc: !!float 1\n',
  'a: |\n  line one\n  line two\nb: >-\n  folded\n  text\nc: "esc\\u00e9\\n"\nd: \'it\'\'s\'\n',
  'key with spaces: 1\n"quoted key": 2\n? complex\n: 3\n',
  '<<: {a: 1}\nb: 2\n',
  '{"apiVersion": "kupenstack.io/v1alpha1", "kind": "Network", "metadata": {"name": "n"}, "spec": {"mtu": 1.0}}\n',
  '---\n---\na: 1\n...\n---\n# only a comment\n',
  'a: [1, 2, {b: c}]\nd: {e: [f, g]}\n',
  'a: 1\na: 2\n',
];

function compare(name: string, text: string): boolean {
  const fast = fastParse(text);
  // honest: a text the fast parser leaves to the precise one has nothing to compare; callers count the compared texts
  if (fast === undefined) return false;
  const docs = parseAllDocuments(text, preciseOptions);
  const precise = Array.isArray(docs) ? docs : [];
  expect(precise.flatMap((d) => d.errors.map((e) => e.message)), `${name}: js-yaml accepts what yaml refuses`).toEqual([]);
  expect(precise.map((d) => jsonNumbers(d.toJS({ maxAliasCount: 100 }))), name).toStrictEqual(fast.map((v) => jsonNumbers(v ?? null)));
  return true;
}

/** The one known difference: `-0` is -0 for yaml and 0 for js-yaml. Values leave the agent as JSON, where both are 0. */
function jsonNumbers(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(jsonNumbers);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonNumbers(x)]));
  return v;
}

describe('js-yaml (fast path) and yaml (precise path) read manifests the same', () => {
  it('every manifest file, corpus case and benchmark revision', () => {
    const texts = corpus();
    const compared = texts.filter(([name, text]) => compare(name, text));
    // Most of them take the fast path, so the comparison is not vacuous.
    expect(compared.length).toBeGreaterThan(texts.length / 2);
    expect(compared.length).toBeGreaterThan(100);
  });

  it('scalars where YAML versions differ', () => {
    expect(cornerCases.filter((text) => compare(JSON.stringify(text), text)).length).toBeGreaterThan(cornerCases.length / 2);
  });

  it('-0, the one difference, is the same number once written as JSON', () => {
    const precise = parseAllDocuments('n: -0\n', preciseOptions);
    const fromYaml = (Array.isArray(precise) ? precise : [])[0]?.toJS() as { n: number };
    const fromJsYaml = fastParse('n: -0\n')?.[0] as { n: number };
    expect(Object.is(fromYaml.n, -0) && Object.is(fromJsYaml.n, 0)).toBe(true);
    expect(JSON.stringify(fromYaml)).toBe(JSON.stringify(fromJsYaml));
  });
});
