import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { noSecrets } from '../../../agent/act/apply.ts';
import type { SyncConfig } from '../../../agent/sync/settings.ts';
import { ImageMemory } from '../../../agent/kinds/kit/image-memory.ts';
import { DirectorySource } from '../../../agent/source/directory.ts';
import { SyncRunner } from '../../../agent/standalone/sync-runner.ts';
import { createLogger } from '../../../agent/telemetry/logger.ts';
import { AgentMetrics } from '../../../agent/telemetry/metrics.ts';
import type * as Load from '../../../agent/load/load.ts';
import type * as Validate from '../../../agent/validate/validate.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { testCloudName } from '../../support/context.ts';

// Every folder read and every validation in this process is counted, whoever calls it:
// a path that loads a revision again behind the Sync run's back shows up here.
const counts = vi.hoisted(() => ({ loads: 0, validations: 0 }));
vi.mock('../../../agent/load/load.ts', async (original) => {
  const m = await original<typeof Load>();
  return { ...m, loadTree: (...args: Parameters<typeof m.loadTree>) => (counts.loads++, m.loadTree(...args)) };
});
vi.mock('../../../agent/validate/validate.ts', async (original) => {
  const m = await original<typeof Validate>();
  return { ...m, validateRevision: (...args: Parameters<typeof m.validateRevision>) => (counts.validations++, m.validateRevision(...args)) };
});

let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

const net = (name: string): Record<string, string> => ({ [`once/${name}.yaml`]: `${head('Network', name, 'once')}  mtu: 1400\n` });

describe('one standalone Sync run loads and validates its revision once', () => {
  it('the first run, and a new revision with the fast pass, the cloud step and the full pass', async () => {
    const sync: SyncConfig = { name: 'once', source: { directory: { path: ws.repo } }, path: '.', intervalMs: 3_600_000, retryIntervalMs: 60_000, timeoutMs: 600_000, suspend: false, prune: true, dependsOn: [], wait: false, owner: ws.owner, projectPrefix: ws.config.projectPrefix };
    // cloudStep without a kubeconfig: the revision's OpenStackCloud is only looked for, from the same loaded revision.
    const runner = await SyncRunner.create(sync, { config: ws.config, cloud: testCloudName, source: new DirectorySource({ directory: ws.repo }), logger: createLogger('silent'), metrics: new AgentMetrics(), secrets: noSecrets, cloudStep: {}, images: new ImageMemory() });
    const signal = new AbortController().signal;

    ws.write(net('net-a'));
    counts.loads = counts.validations = 0;
    expect(await runner.run('startup', signal)).toBe(true);
    expect(counts).toEqual({ loads: 1, validations: 1 });

    // A new revision: the fast pass compares with the last good one (kept as data), then the full pass.
    ws.write(net('net-b'));
    counts.loads = counts.validations = 0;
    expect(await runner.run('watch', signal)).toBe(true);
    expect(counts).toEqual({ loads: 1, validations: 1 });
    expect(runner.status.history.at(-1)).toMatchObject({ result: 'Succeeded', counts: { created: 1 } });
  });
});
