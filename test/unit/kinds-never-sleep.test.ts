import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import type { AdapterContext } from '../../agent/kinds/kit/adapter.ts';
import { lookAgain } from '../../agent/kinds/kit/look-again.ts';

/**
 * Progress by requeue (issue 27): no adapter under agent/kinds waits for
 * OpenStack by itself. The one wait is kinds/kit/look-again.ts, which looks once
 * and answers waiting in requeue mode (the controller). Any other timer, sleep
 * or poll loop in kinds/ would hold a namespace's slot in the cluster.
 */

const root = join(import.meta.dirname, '..', '..');
const kindsDir = join(root, 'agent', 'kinds');
const theOneWait = 'agent/kinds/kit/look-again.ts';

const timerModules = new Set(['node:timers/promises', 'timers/promises', 'node:timers', 'timers']);
const sleepingCalls = new Set(['setTimeout', 'setInterval', 'setImmediate', 'sleep', 'poll']);

/** Each way a source waits by itself, as `line: what` (imports of timers or the poll helper, timer and sleep calls, Atomics.wait). */
function sleepsIn(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (n: ts.Node, what: string): void => void found.push(`${file}:${source.getLineAndCharacterOfPosition(n.getStart()).line + 1}: ${what}`);
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const from = n.moduleSpecifier.text;
      if (timerModules.has(from) || /\/util\/poll(\.ts)?$/.test(from)) at(n, `imports ${from}`);
    }
    if (ts.isCallExpression(n)) {
      const callee = n.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? `${callee.expression.getText(source)}.${callee.name.text}` : '';
      if (sleepingCalls.has(name) || name === 'Atomics.wait' || /^(globalThis|timers)\.(setTimeout|setInterval)$/.test(name)) at(n, `calls ${name}`);
    }
    ts.forEachChild(n, visit);
  };
  visit(source);
  return found;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

const ctx = (requeue: boolean): AdapterContext => ({ requeue }) as AdapterContext;

/**
 * Every other file of agent/ that waits by itself, and why that holds no
 * namespace's slot: a new wait anywhere fails the test until it is looked at
 * here. The dual-mode ones (wait standalone, waiting answered in requeue mode) have
 * their own test of the requeue side.
 */
const knownWaits: Record<string, string> = {
  'agent/act/landing.ts': 'creates a dead process sent: waits standalone, answers waiting in requeue mode (test/unit/landing.test.ts)',
  'agent/act/bulk.ts': 'one tick (setImmediate) gathers the creates that start together into one bulk POST',
  'agent/act/wait.ts': "the engine's Ready/gone wait: polls standalone, looks once in requeue mode",
  'agent/cli/cluster/sync-client.ts': '`kupenstack reconcile sync`, a CLI command, waits for the Sync to handle its request; no loop runs it',
  'agent/glance/versions.ts': "another worker's upload: waits standalone, answers waiting in requeue mode",
  'agent/glance/import-task.ts':
    "Glance's conversion of a disk just staged: polled to its end (at most 1 h) inside the upload, which holds the slot for the transfer anyway; requeue mode does not answer waiting here yet (the half-imported image is then another worker's upload to versions.ts)",
  'agent/glance/members.ts': 'a short random back-off between two member writes that met (409), not a wait for OpenStack to work',
  'agent/cloud/apply.ts': "a chart's gate and a Job being replaced: polls standalone, looks once and returns a Progress in requeue mode (test/integration/cloud/install.test.ts)",
  'agent/util/poll.ts': 'the poll helper act/wait.ts uses in wait mode',
  'agent/openstack/session.ts': 'the first call waits (bounded) for a token in flight instead of asking Keystone twice',
  'agent/source/directory.ts': "the dev watcher's debounce",
  'agent/sync/scheduler.ts': "the Sync's interval timer and its stop grace",
  'agent/secrets/kubernetes.ts': 'rewatch after a watch error',
  'agent/kube/rewatch.ts': 'rewatch after a watch error',
  'agent/controller/resources/work-queue.ts': "the queue's debounce and look-again timers (what requeue schedules)",
  'agent/controller/resources/controller.ts': "a namespace's hand-over delay between shards, through the queue",
  'agent/controller/clouds/cloud-loop.ts': 'the maintenance window timer, through the queue',
  'agent/controller/clouds/connections.ts': "each OpenStackCloudConnection's probe timer (10 s while up, 1–30 s back-off while down); no namespace's run waits on it: a cloud that is down fails the run at once",
  'agent/controller/rollouts/rollout-loop.ts': "the ImageRollout loop's tick (setInterval): it holds no engine slot and never waits inside a run",
  'agent/controller/leases/leader.ts': "the Lease's renew timer",
  'agent/controller/api-contact.ts': "the API server contact's check timer",
  'agent/view/live.ts': "the web view's event stream: changes grouped every 200 ms and a keep-alive comment; a person's page, never a namespace's run",
  'agent/view/local-backend.ts': "the standalone view reads the agent's state once a second for its live page; it reads files, not OpenStack",
  'agent/view/watches.ts': "the web view's watch made again after an error, with the person's token; no namespace's slot",
};

describe('no adapter sleeps in requeue mode', () => {
  it('no file under agent/kinds waits by itself, except the one wait that looks once in requeue mode', () => {
    const files = tsFiles(kindsDir).map((f) => relative(root, f));
    expect(files.length, 'the kinds found').toBeGreaterThan(20);
    const findings = files.filter((f) => f !== theOneWait).flatMap((f) => sleepsIn(f, readFileSync(join(root, f), 'utf8')));
    expect(findings, 'waits outside kinds/kit/look-again.ts: use lookAgain (it looks once in requeue mode)').toEqual([]);
    // The exception still is what it claims to be: the one place that sleeps.
    expect(sleepsIn(theOneWait, readFileSync(join(root, theOneWait), 'utf8')).length).toBeGreaterThan(0);
  });

  it('no other file of agent/ waits by itself unless it is listed with why it holds no slot', () => {
    const files = tsFiles(join(root, 'agent')).map((f) => relative(root, f)).filter((f) => !f.startsWith('agent/kinds/'));
    const waiting = files.filter((f) => sleepsIn(f, readFileSync(join(root, f), 'utf8')).length > 0).sort();
    expect(waiting, 'files of agent/ that wait: list a new one in knownWaits with why (or make it look once: lib/not-yet.ts)').toEqual(Object.keys(knownWaits).sort());
  });

  it('finds a planted wait: a timer promise, a sleep import, a poll loop', () => {
    const planted = [
      "import { setTimeout as sleep } from 'node:timers/promises';",
      "import { poll } from '../util/poll.ts';",
      'export async function settle(): Promise<void> {',
      '  await new Promise((resolve) => setTimeout(resolve, 500));',
      '  await sleep(1000);',
      '  // setTimeout in a comment is no wait',
      '}',
    ].join('\n');
    expect(sleepsIn('agent/kinds/planted.ts', planted)).toEqual([
      'agent/kinds/planted.ts:1: imports node:timers/promises',
      'agent/kinds/planted.ts:2: imports ../util/poll.ts',
      'agent/kinds/planted.ts:4: calls setTimeout',
      'agent/kinds/planted.ts:5: calls sleep',
    ]);
  });

  it('lookAgain looks once and answers waiting in requeue mode, and looks until done otherwise', async () => {
    let looks = 0;
    const look = () => Promise.resolve(++looks >= 2 ? { done: 'ACTIVE' } : { why: 'still BUILD' });
    const opts = { look, what: 'server s1 waits for ACTIVE', timeoutMs: 60_000, onTimeout: (why: string) => new Error(why) };
    const seen = await lookAgain(ctx(true), opts);
    expect(seen).toEqual({ waiting: { reason: 'server s1 waits for ACTIVE: still BUILD', afterMs: 5_000 } });
    expect(looks).toBe(1);
    looks = 0;
    await expect(lookAgain(ctx(false), opts)).resolves.toEqual({ done: 'ACTIVE' });
    expect(looks).toBe(2);
  });
});
