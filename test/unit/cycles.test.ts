import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LineIndex, positionIn } from '../../agent/load/document.ts';
import { parseManifestFile } from '../../agent/load/parse.ts';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { validateRevision } from '../../agent/validate/validate.ts';
import { parseDocument } from 'yaml';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const docs = (text: string) => parseManifestFile({ file: 'm.yaml', text }).documents;
const head = (kind: string, name: string) => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: t}\nspec:\n`;

describe('dependency cycles', () => {
  it('are reported once per cycle, naming every manifest on it', () => {
    // Today's kinds cannot reference each other in a circle except through
    // weak security-group references; two test kinds exercise the real path.
    const dir = mkdtempSync(join(tmpdir(), 'ks-schemas-'));
    dirs.push(dir);
    copyFileSync('schemas/common.schema.json', join(dir, 'common.schema.json'));
    const kind = (title: string, other: string) => ({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: `https://kupenstack.io/schemas/v1alpha1/${title.toLowerCase()}.schema.json`,
      title,
      type: 'object',
      'x-kupenstack-scope': 'Namespaced',
      'x-kupenstack-plural': `${title.toLowerCase()}s`,
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: { $ref: 'common.schema.json#/$defs/namespacedMetadata' },
        spec: { type: 'object', properties: { [`${other.toLowerCase()}Ref`]: { $ref: 'common.schema.json#/$defs/localRef', 'x-kupenstack-ref': other } } },
      },
    });
    writeFileSync(join(dir, 'alpha.schema.json'), JSON.stringify(kind('Alpha', 'Beta')));
    writeFileSync(join(dir, 'beta.schema.json'), JSON.stringify(kind('Beta', 'Alpha')));
    const registry = loadSchemaRegistry(dir);
    const result = validateRevision(docs(`${head('Alpha', 'a')}  betaRef: {name: b}\n---\n${head('Beta', 'b')}  alphaRef: {name: a}\n`), registry);
    expect(result.diagnostics.map((d) => [d.code, d.line, d.column, d.message])).toEqual([
      ['graph.cycle', 3, 18, 'dependency cycle: t/Alpha/a → t/Beta/b → t/Alpha/a; remove one of these references'],
    ]);
    expect(result.order).toEqual([]);
  });

  it('security groups that name each other, or themselves, are not a cycle: groups first, rules after', () => {
    const registry = loadSchemaRegistry();
    const sg = (name: string, peer: string) => `${head('SecurityGroup', name)}  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: 5432, portRangeMax: 5432, remoteGroupRef: {name: ${peer}}}\n    - {direction: ingress, protocol: icmp, remoteGroupRef: {name: ${name}}}\n`;
    const result = validateRevision(docs(`${sg('app', 'db')}---\n${sg('db', 'app')}`), registry);
    expect(result.diagnostics).toEqual([]);
    expect(result.order).toEqual(['t/SecurityGroup/app', 't/SecurityGroup/db']);
    expect(result.references.map((r) => `${r.from.metadata.name}->${r.targetName}${r.weak ? ' (weak)' : ''}`)).toEqual(['app->db (weak)', 'app->app (weak)', 'db->app (weak)', 'db->db (weak)']);
  });
});

describe('positions', () => {
  it('point at the key for a missing field and at the value for a wrong one', () => {
    const text = 'a:\n  b:\n    c: 1\n  list:\n    - x\n    - y\n';
    const doc = parseDocument(text);
    const lines = new LineIndex(text);
    expect(positionIn(doc, lines, ['a', 'b', 'c'])).toEqual({ line: 3, column: 8 });
    expect(positionIn(doc, lines, ['a', 'b', 'missing'], 'key')).toEqual({ line: 2, column: 3 });
    expect(positionIn(doc, lines, ['a', 'list', 1])).toEqual({ line: 6, column: 7 });
  });
});
