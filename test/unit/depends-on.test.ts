import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../agent/config/config-error.ts';
import { loadConfig } from '../../agent/sync/config-file.ts';
import { dependencyWait, findCycle } from '../../agent/sync/depends-on.ts';
import { runAfterDependencies, type DependencyHandle } from '../../agent/standalone/agent.ts';
import type { Trigger } from '../../agent/sync/scheduler.ts';
import { StatusStore, type SyncStatus } from '../../agent/sync/status.ts';
import { createLogger } from '../../agent/telemetry/logger.ts';

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

/*
 * The standalone agent's gate (the scheduler's run of each Sync): a Sync runs only once every Sync it
 * depends on is Ready at its newest revision; until then it is not run, its status says what it waits
 * for, and it is saved. A run wakes the Syncs that wait for it. (The cluster's twin is covered by
 * test/integration/controller/sync-order.test.ts.)
 */
describe('standalone dependsOn: runAfterDependencies', () => {
  const ready = (status: 'True' | 'False', fetched: string, applied: string | undefined): SyncStatus => ({
    name: 'base',
    source: 'directory x',
    suspended: false,
    lastFetchedRevision: fetched,
    ...(applied ? { lastAppliedRevision: applied } : {}),
    conditions: [{ type: 'Ready', status, reason: status === 'True' ? 'Succeeded' : 'ApplyFailed', message: status === 'True' ? 'applied' : 'network quota', lastTransitionTime: '2026-12-01T00:00:00Z' }],
    history: [],
  });

  async function setup(base: SyncStatus | undefined): Promise<{ run: () => Promise<boolean>; runs: string[]; woken: string[]; store: StatusStore }> {
    const runs: string[] = [];
    const woken: string[] = [];
    const handles = new Map<string, DependencyHandle>();
    if (base) handles.set('base', { sync: { name: 'base', dependsOn: [] }, runner: { status: base }, scheduler: { trigger: () => true } });
    handles.set('apps', { sync: { name: 'apps', dependsOn: ['base'] }, runner: { status: { name: 'apps', source: 'x', suspended: false, conditions: [], history: [] } }, scheduler: { trigger: () => true } });
    handles.set('edge', { sync: { name: 'edge', dependsOn: ['apps'] }, runner: { status: { name: 'edge', source: 'x', suspended: false, conditions: [], history: [] } }, scheduler: { trigger: (t) => (woken.push(`edge ${t}`), true) } });
    const store = await StatusStore.open(join(mkdtempSync(join(dir, 'status-')), 'status.json'), 'apps', 'directory x', false);
    const runner = { store, run: (t: Trigger) => (runs.push(t), Promise.resolve(true)) };
    const log = createLogger('silent');
    return { run: () => runAfterDependencies(handles, { name: 'apps', dependsOn: ['base'] }, runner, log, 'interval', new AbortController().signal), runs, woken, store };
  }

  it('does not run while a dependency is not Ready: Ready and Reconciling False with DependencyNotReady, saved; nobody woken', async () => {
    const s = await setup(ready('False', 'main@sha1:b', 'main@sha1:a'));
    expect(await s.run()).toBe(false);
    expect(s.runs).toEqual([]);
    expect(s.woken).toEqual([]);
    const waiting = 'waiting: dependency base is not Ready (ApplyFailed: network quota)';
    expect(s.store.status.conditions.filter((c) => c.type === 'Ready' || c.type === 'Reconciling').map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      ['Ready', 'False', 'DependencyNotReady', waiting],
      ['Reconciling', 'False', 'DependencyNotReady', waiting],
    ]);
    const saved = JSON.parse(readFileSync(s.store.file, 'utf8')) as SyncStatus;
    expect(saved.conditions.find((c) => c.type === 'Ready')?.message).toBe(waiting);
  });

  it('does not run while a dependency is Ready at an older revision than it fetched, or is missing', async () => {
    const older = await setup(ready('True', 'main@sha1:b', 'main@sha1:a'));
    expect(await older.run()).toBe(false);
    expect(older.runs).toEqual([]);
    expect(older.store.get('Ready')?.message).toBe('waiting: dependency base is not Ready at its newest revision main@sha1:b yet');
    const missing = await setup(undefined);
    expect(await missing.run()).toBe(false);
    expect(missing.runs).toEqual([]);
    expect(missing.store.get('Ready')?.message).toBe('waiting: dependency base does not exist');
  });

  it('runs once every dependency is Ready at its newest revision, and wakes the Syncs that depend on it', async () => {
    const s = await setup(ready('True', 'main@sha1:b', 'main@sha1:b'));
    expect(await s.run()).toBe(true);
    expect(s.runs).toEqual(['interval']);
    expect(s.woken).toEqual(['edge dependency']);
  });
});
