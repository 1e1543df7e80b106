import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { FileCreateJournal } from '../../agent/status/create-journal.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { runApply } from '../support/apply-child.ts';
import { testCloudName } from '../support/context.ts';
import { OpenStackFaultProxy } from '../testbed/faults/openstack-proxy.ts';

/**
 * kill -9 while a bulk create is in flight, then apply again at once: Neutron goes on making the bulk
 * after its client died, and a run that observed before the bulk landed would create it a second
 * time. The killed run's journal tells the next one to wait for those creates and adopt them.
 */
let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

const ns = 'landing';
const nets = 24;

describe('a create in flight when the process is killed', () => {
  it('is waited for and adopted by the next run, never made twice', { timeout: 600_000 }, async () => {
    writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir, concurrency: 8 }));
    const docs = Array.from({ length: nets }, (_, i) => `${head('Network', `net-${i}`, ns)}  mtu: 1400\n`);
    ws.write({ [`${ns}/all.yaml`]: docs.join('---\n') });
    const journal = new FileCreateJournal(ws.config.stateDir, ws.owner);
    // The killed run reaches OpenStack through the fault proxy, which holds its first network bulk POST:
    // in flight at the kill for as long as the test wants, whatever the bed's speed (audit W3).
    const proxy = await new OpenStackFaultProxy({ seed: 1, rate: 0, slowMs: 1_000 }).start();
    const held = proxy.hold('POST', /\/networks$/);
    const real = parse(readFileSync(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml'), 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
    const entry = real.clouds[testCloudName]!;
    const cloudsFile = join(ws.dir, 'clouds-held.yaml');
    writeFileSync(cloudsFile, stringify({ clouds: { [testCloudName]: { ...entry, auth: { ...entry.auth, auth_url: proxy.authUrl } } } }), { mode: 0o600 });
    const run = runApply(ws, [], ws.repo, { OS_CLIENT_CONFIG_FILE: cloudsFile });
    const request = await Promise.race([held.arrived, run.done.then(() => undefined)]);
    run.kill();
    await run.done;
    expect(request, `no bulk create was held to kill: ${run.stderr()}`).toBeDefined();
    const inBulk = (JSON.parse(request!.body) as { networks: { name: string }[] }).networks.map((n) => `${ns}/Network/${n.name}`);
    // The journal recorded the held bulk before it left.
    const open = openEntries(journal.file);
    expect(open.length).toBeGreaterThan(0);
    expect([...(await new FileCreateJournal(ws.config.stateDir, ws.owner).landing()).keys()]).toEqual(expect.arrayContaining(inBulk));

    const logged = ws.log.length;
    const rerunning = ws.apply();
    // The re-run waits for the held bulk (it is still held: Neutron has not made it), then it is released.
    await until(() => ws.log.slice(logged).some((l) => /waiting up to \d+ s for \d+ creates an earlier run sent/.test(l)), 180_000);
    held.release();
    expect(await held.answered).toBe(201);
    await proxy.stop();
    const rerun = await rerunning;
    expect(rerun.report?.errors ?? rerun.diagnostics, ws.log.join('\n')).toEqual([]);

    const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${ns}` });
    const found = await ws.cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: project!.id });
    expect(found.map((n) => n.name).sort()).toEqual(Array.from({ length: nets }, (_, i) => `net-${i}`).sort());
    // Nothing is left in the journal that could hold a later run back.
    expect(await journal.landing()).toEqual(new Map());
  });
});

describe('a create an earlier process sent and never saw answered', () => {
  it('holds the next run back until it lands, then is adopted, not made again', { timeout: 600_000 }, async () => {
    const late = 'landing-late';
    const manifests = (n: number): Record<string, string> => ({ [`${late}/all.yaml`]: Array.from({ length: n }, (_, i) => `${head('Network', `late-${i}`, late)}  mtu: 1400\n`).join('---\n') });
    ws.write(manifests(1));
    expect((await ws.apply()).report?.errors).toEqual([]);
    // As a killed process leaves it: late-1 sent, not answered, landing within 60 s.
    await new FileCreateJournal(ws.config.stateDir, ws.owner).begin([`${late}/Network/late-1`], Date.now() + 60_000);
    ws.write(manifests(2));
    const logged = ws.log.length;
    const run = ws.apply();
    // OpenStack "finishes" it 5 s later: the same owner's marker, made by another engine with its own state.
    await sleep(5000);
    const other = await applyPath({ path: ws.repo, cloud: testCloudName, config: { ...ws.config, stateDir: join(ws.dir, 'other-state') }, prune: false, allowMassDelete: false, log: () => undefined });
    expect(other.report?.created).toBe(1);
    const outcome = await run;
    const log = ws.log.slice(logged).join('\n');
    expect(outcome.report?.errors, log).toEqual([]);
    expect(log).toMatch(/waiting up to \d+ s for 1 creates an earlier run sent/);
    // Adopted as observed: the run made nothing.
    expect(outcome.report?.created, log).toBe(0);
    const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${late}` });
    const found = await ws.cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: project!.id });
    expect(found.map((n) => n.name).sort()).toEqual(['late-0', 'late-1']);
  });
});

/** Polls `check` every 100 ms; throws after `ms`. */
async function until(check: () => boolean, ms: number): Promise<void> {
  for (const end = Date.now() + ms; !check(); ) {
    if (Date.now() > end) throw new Error(`timed out after ${ms / 1000} s; log:\n${ws.log.join('\n')}`);
    await sleep(100);
  }
}

/** Entries begun and not ended in the journal file, as the killed process left it. */
function openEntries(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return []; // not written yet
  }
  const open = new Set<string>();
  for (const line of text.split('\n').filter(Boolean)) {
    let l: { b?: string; e?: string };
    try {
      l = JSON.parse(line) as { b?: string; e?: string };
    } catch {
      continue; // being written
    }
    if (l.b) open.add(l.b);
    else if (l.e) open.delete(l.e);
  }
  return [...open];
}
