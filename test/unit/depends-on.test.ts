import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../agent/config/config-error.ts';
import { loadConfig } from '../../agent/sync/config-file.ts';
import { dependencyWait, findCycle } from '../../agent/sync/depends-on.ts';

const dir = mkdtempSync(join(tmpdir(), 'ks-depends-'));
function error(text: string): string {
  const f = join(dir, `k${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(f, text);
  try {
    loadConfig(f);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message.replace(f, 'FILE');
  }
  throw new Error('expected a ConfigError');
}
const sync = (name: string, deps: string[]): string => `  - name: ${name}\n    source: {directory: {path: /x}}\n${deps.length ? `    dependsOn:\n${deps.map((d) => `      - name: ${d}\n`).join('')}` : ''}`;

describe('dependsOn between Syncs', () => {
  it('kupenstack.yaml: a cycle, a missing Sync and a Sync depending on itself are refused at the line, saying what to change', () => {
    expect(error(`syncs:\n${sync('a', ['b'])}${sync('b', ['c'])}${sync('c', ['a'])}`)).toBe(
      'FILE:5:7 (syncs[0].dependsOn): dependsOn forms a cycle a → b → c → a: each would wait for the other forever; remove one of these dependencies',
    );
    expect(error(`syncs:\n${sync('a', [])}${sync('b', ['nets'])}`)).toBe('FILE:7:15 (syncs[1].dependsOn[0].name): Sync "b" depends on "nets", which is not in syncs: (known: a, b); fix the name or add that Sync');
    expect(error(`syncs:\n${sync('a', ['a'])}`)).toMatch(/^FILE:5:15 \(syncs\[0\]\.dependsOn\[0\]\.name\): Sync "a" depends on itself/);
    expect(error(`syncs:\n${sync('a', [])}  - name: b\n    source: {directory: {path: /x}}\n    dependsOn: [a]\n`)).toMatch(/^FILE:6:\d+ \(syncs\[1\]\.dependsOn\[0\]\): expected a mapping with keys name/);
  });

  it('an acyclic graph is accepted, with each Sync keeping its dependencies', () => {
    const f = join(dir, 'ok.yaml');
    writeFileSync(f, `syncs:\n${sync('nets', [])}${sync('tenants', ['nets'])}${sync('apps', ['nets', 'tenants'])}`);
    expect(loadConfig(f).syncs?.map((s) => [s.name, s.dependsOn])).toEqual([['nets', []], ['tenants', ['nets']], ['apps', ['nets', 'tenants']]]);
    expect(findCycle(new Map([['x', ['y']], ['y', []], ['z', ['x', 'y']]]))).toBeUndefined();
  });

  it('a dependency is waited for until it is Ready at the revision it fetched last', () => {
    expect(dependencyWait('nets', undefined)).toBe('dependency nets does not exist');
    expect(dependencyWait('nets', { ready: { status: 'False', reason: 'ApplyFailed', message: 'boom' } })).toBe('dependency nets is not Ready (ApplyFailed: boom)');
    expect(dependencyWait('nets', { ready: { status: 'True' }, lastFetchedRevision: 'main@sha1:2', lastAppliedRevision: 'main@sha1:1' })).toBe('dependency nets is not Ready at its newest revision main@sha1:2 yet');
    expect(dependencyWait('nets', { ready: { status: 'True' }, lastFetchedRevision: 'main@sha1:2', lastAppliedRevision: 'main@sha1:2' })).toBeUndefined();
  });
});
