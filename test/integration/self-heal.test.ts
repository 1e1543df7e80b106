import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiCounters } from '../../agent/openstack/counters.ts';
import type { State } from '../../agent/status/state.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

let ws: Workspace;
let server: Server;

interface NovaServer {
  id: string;
  name: string;
  status: string;
  addresses: Record<string, unknown>;
}

const openstack = (...args: string[]): string => execFileSync('openstack', ['--os-cloud', testCloudName, ...args], { encoding: 'utf8' });

async function theServer(): Promise<NovaServer | undefined> {
  const compute = await ws.cloud.adminCompute();
  const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-heal` });
  const all = await compute.list<NovaServer>('/servers/detail', 'servers', { all_tenants: 1, project_id: project!.id });
  return all.find((s) => s.name === 'web');
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

function state(): State {
  return JSON.parse(readFileSync(join(ws.config.stateDir, `${ws.owner}.json`), 'utf8')) as State;
}

beforeAll(async () => {
  ws = new Workspace();
  server = createServer((_req, res) => res.end(Buffer.alloc(64 * 1024)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  ws.write({
    'heal.yaml': [
      `${head('Network', 'net', 'heal')}  mtu: 1400\n`,
      `${head('Subnet', 'sub', 'heal')}  networkRef: {name: net}\n  cidr: 10.77.0.0/24\n`,
      `${head('Flavor', 'tiny', 'heal')}  vcpus: 1\n  ram: 64\n  disk: 1\n`,
      `${head('Image', 'raw', 'heal')}  diskFormat: raw\n  source:\n    url: {url: "http://127.0.0.1:${port}/disk.raw"}\n`,
      `${head('VirtualMachine', 'web', 'heal')}  flavorRef: {name: tiny}\n  imageRef: {name: raw}\n  networks: [{networkRef: {name: net}}]\n  heal: {strategy: recreate, maxAttempts: 5, backoff: 1s}\n`,
    ].join('---\n'),
  });
  const first = await ws.apply();
  expect(first.report!.errors, ws.log.join('\n')).toEqual([]);
});
afterAll(async () => {
  await ws.dispose();
  server.close();
});

describe('self-healing VMs', () => {
  it("a no-op apply takes the VM's flavor from what the Flavor kind listed: no GET of the flavor by id", async () => {
    const counters = new ApiCounters();
    const r = await ws.apply({ counters });
    expect(r.report, ws.log.join('\n')).toMatchObject({ errors: [] });
    // The Flavor kind's list (/flavors/detail) and its private flavor's access list; nothing more for the VM.
    expect(counters.byCollection()['compute GET /flavors']).toBe(2);
  });

  it('a VM stopped outside Git is started again on the next apply', async () => {
    const before = await theServer();
    openstack('server', 'stop', before!.id);
    await until('SHUTOFF', async () => (await theServer())?.status === 'SHUTOFF');
    const r = await ws.apply();
    expect(r.report).toMatchObject({ healed: 1, errors: [] });
    expect((await theServer())!.status).toBe('ACTIVE');
    expect(state().resources['heal/VirtualMachine/web']!.healHistory!.at(-1)).toMatchObject({ step: 'reboot', result: 'done' });
  });

  it('a VM in ERROR (nova reset-state --error) is healed, and the attempt is in the status', async () => {
    const before = await theServer();
    openstack('server', 'set', '--state', 'error', before!.id);
    const r = await ws.apply();
    expect(r.report).toMatchObject({ healed: 1, errors: [] });
    const after = await theServer();
    expect(after!.status).toBe('ACTIVE');
    expect(after!.id).toBe(before!.id);
    const last = state().resources['heal/VirtualMachine/web']!.healHistory!.at(-1)!;
    expect(last).toMatchObject({ step: 'reboot', result: 'done' });
    expect(last.reason).toMatch(/ERROR|fault/i);
  });

  it('a stopped VM forced to ACTIVE (nova reset-state --active) is noticed and rebooted', async () => {
    const before = await theServer();
    openstack('server', 'stop', before!.id);
    await until('SHUTOFF', async () => (await theServer())?.status === 'SHUTOFF');
    openstack('server', 'set', '--state', 'active', before!.id);
    const r = await ws.apply();
    expect(r.report).toMatchObject({ healed: 1, errors: [] });
    const show = JSON.parse(openstack('server', 'show', before!.id, '-f', 'json')) as Record<string, unknown>;
    // power_state 1 = RUNNING in Nova's numbering (the CLI prints it as a number with -f json).
    expect([show.status, show['OS-EXT-STS:power_state']]).toEqual(['ACTIVE', 1]);
  });

  it('a VM deleted outside Git comes back with the same name and network', async () => {
    const before = await theServer();
    openstack('server', 'delete', '--wait', before!.id);
    const r = await ws.apply();
    expect(r.report).toMatchObject({ healed: 1, created: 1, errors: [] });
    const after = await theServer();
    expect(after!.id).not.toBe(before!.id);
    expect(after!.status).toBe('ACTIVE');
    expect(Object.keys(after!.addresses)).toEqual(Object.keys(before!.addresses));
    expect(state().resources['heal/VirtualMachine/web']!.healHistory!.at(-1)).toMatchObject({ step: 'recreate', reason: 'deleted outside Git' });
  });
});
