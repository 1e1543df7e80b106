import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../agent/act/projects.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { runApply } from '../support/apply-child.ts';

/**
 * Ctrl-C (SIGINT) or SIGTERM to `kupenstack apply`: the calls in flight
 * finish, no new one starts, and it exits non-zero saying so. Before, a
 * prune went on deleting until its end whatever the signals.
 */
const ns = 'intr-a';
const networks = 30;
const concurrency = 2;

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
  writeFileSync(join(ws.dir, 'kupenstack.yaml'), stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir, concurrency }));
});
afterAll(async () => {
  await ws.dispose();
}, 600_000);

async function ourNetworks(): Promise<number> {
  const [p] = (await ownedProjects(ws.cloud, ws.owner)).filter((x) => x.namespace === ns);
  if (!p) return 0;
  return (await ws.cloud.client('network').list<{ id: string }>('/networks', 'networks', { project_id: p.id })).length;
}

describe('an interrupted apply', () => {
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    it(`on ${sig} starts no new OpenStack write and exits non-zero`, async () => {
      ws.write({ [`${ns}/nets.yaml`]: Array.from({ length: networks }, (_, i) => `${head('Network', `net-${i}`, ns)}  mtu: 1400\n`).join('---\n') });
      const create = runApply(ws, []);
      expect(await create.done, ws.log.join('\n')).toBe(0);
      expect(await ourNetworks()).toBe(networks);

      ws.remove(`${ns}/nets.yaml`);
      ws.write({ 'other/keep.yaml': `${head('Network', 'keep', 'other')}  mtu: 1400\n` });
      const prune = runApply(ws, ['--prune', '--allow-mass-delete']);
      await prune.firstWrite;
      prune.signal(sig);
      const code = await prune.done;
      expect(code).not.toBe(0);
      expect(prune.stderr()).toMatch(/interrupted/);
      // At most the deletions in flight (one per slot, and the network 'keep' created first) went out; the rest is still there.
      const deleted = prune.stderr().split('\n').filter((l) => l.startsWith('delete  ')).length;
      expect(deleted).toBeLessThanOrEqual(concurrency * 2);
      expect(await ourNetworks()).toBeGreaterThanOrEqual(networks - concurrency * 2);
    }, 600_000);
  }
});
