import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planPath } from '../../agent/standalone/apply-path.ts';
import type { Plan } from '../../agent/plan/plan.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { testCloudName } from '../support/context.ts';

let ws: Workspace;
let server: Server;
let url = '';

const files = (image: string, flavor: string, withNet2 = true): Record<string, string> => ({
  'base.yaml': [
    `${head('Network', 'net', 'plan')}  mtu: 1400\n`,
    `${head('Subnet', 'sub', 'plan')}  networkRef: {name: net}\n  cidr: 10.91.0.0/24\n`,
    `${head('Flavor', 'small', 'plan')}  vcpus: 1\n  ram: 64\n  disk: 1\n`,
    `${head('Flavor', 'large', 'plan')}  vcpus: 2\n  ram: 128\n  disk: 1\n`,
    `${head('Image', 'one', 'plan')}  diskFormat: raw\n  source:\n    url: {url: "${url}/one.raw"}\n`,
    `${head('Image', 'two', 'plan')}  diskFormat: raw\n  source:\n    url: {url: "${url}/two.raw"}\n`,
    `${head('VirtualMachine', 'vm', 'plan')}  flavorRef: {name: ${flavor}}\n  imageRef: {name: ${image}}\n  networks: [{networkRef: {name: net}}]\n`,
  ].join('---\n'),
  'net2.yaml': withNet2
    ? [
        `${head('Network', 'net2', 'plan')}  mtu: 1400\n`,
        `${head('Subnet', 'sub2', 'plan')}  networkRef: {name: net2}\n  cidr: 10.92.0.0/24\n`,
        `${head('Port', 'port2', 'plan')}  networkRef: {name: net2}\n`,
        `${head('VirtualMachine', 'vm2', 'plan')}  flavorRef: {name: small}\n  imageRef: {name: one}\n  networks: [{portRef: {name: port2}}]\n`,
      ].join('---\n')
    : '',
});

async function plan(prune = false): Promise<Plan> {
  const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune, allowMassDelete: false, log: () => undefined });
  expect(outcome.report!.errors).toEqual([]);
  expect(outcome.report!.apiCalls.write).toBe(0); // a plan never changes the cloud
  return outcome.report!;
}

beforeAll(async () => {
  ws = new Workspace();
  server = createServer((_req, res) => res.end(Buffer.alloc(32 * 1024, 1)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await ws.dispose();
  server.close();
});

describe('kupenstack plan against the live cloud', () => {
  it('plans every create before the first apply, changes nothing, and apply then does exactly that', async () => {
    ws.write(files('one', 'small'));
    const p = await plan();
    expect(p.summary).toMatchObject({ create: 11, update: 0, replace: 0, delete: 0 });
    expect(p.changes.find((c) => c.address === 'plan/Subnet/sub')!.fields.find((f) => f.path === 'network_id')!.after).toBe('(known after apply: Network/net)');
    const applied = await ws.apply();
    expect(applied.report).toMatchObject({ created: 11, errors: [] });
    expect((await plan()).changes).toEqual([]);
  });

  it('shows a changed VM image as destructive (root disk lost), never as a harmless update', async () => {
    ws.write(files('two', 'small'));
    const p = await plan();
    const vm = p.changes.find((c) => c.address === 'plan/VirtualMachine/vm')!;
    expect(vm.action).toBe('update');
    expect(vm.destructive).toBe(true);
    expect(vm.reasons.map((r) => r.code)).toContain('root-disk-lost');
    expect(p.changes[0]!.address).toBe('plan/VirtualMachine/vm'); // destructive changes first
  });

  it('shows a flavor change as a resize', async () => {
    ws.write(files('one', 'large'));
    const vm = (await plan()).changes.find((c) => c.address === 'plan/VirtualMachine/vm')!;
    expect([vm.action, vm.destructive]).toEqual(['update', false]);
    expect(vm.note).toMatch(/resize/);
    expect(vm.fields.map((f) => f.path)).toEqual(['flavor']);
  });

  it('deleting a network shows its subnet, port and VM going with it, the VM and port as destructive', async () => {
    ws.write(files('one', 'small', false));
    ws.remove('net2.yaml');
    const p = await plan(true);
    const deletes = p.changes.filter((c) => c.action === 'delete').map((c) => [c.address, c.destructive, c.reasons.map((r) => r.code)]);
    expect(deletes.sort()).toEqual(
      [
        ['plan/Network/net2', true, ['object-deleted']],
        ['plan/Port/port2', true, ['fixed-ip-changes']],
        ['plan/Subnet/sub2', true, ['object-deleted']],
        ['plan/VirtualMachine/vm2', true, ['root-disk-lost']],
      ].sort(),
    );
    const applied = await ws.apply({ prune: true });
    expect(applied.report).toMatchObject({ deleted: 4, created: 0, updated: 0, errors: [] });
  });

  it('the CLI reads a VM\'s userDataSecretRef from secretsDir, as the agent does, and shows only its digest', () => {
    const secretText = 'plan-cli-user-data-s3cret';
    ws.write({ 'vm3.yaml': `${head('VirtualMachine', 'vm3', 'plan')}  flavorRef: {name: small}\n  imageRef: {name: one}\n  networks: [{networkRef: {name: net}}]\n  userDataSecretRef: {name: vm3-init}\n` });
    const config = join(ws.dir, 'plan-cli.yaml');
    writeFileSync(config, stringify({ owner: ws.owner, projectPrefix: `${ws.owner}-`, stateDir: ws.config.stateDir }));
    const run = () => spawnSync(process.execPath, ['agent/cli/main.ts', 'plan', ws.repo, '--cloud', testCloudName, '-c', config, '-o', 'json'], { encoding: 'utf8' });
    const missing = run();
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('Secret plan/vm3-init key userData');
    const dir = join(ws.config.stateDir, 'secrets', 'plan', 'vm3-init');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'userData'), secretText);
    const found = run();
    expect(found.status, found.stderr).toBe(2);
    const vm3 = (JSON.parse(found.stdout) as Plan).changes.find((c) => c.address === 'plan/VirtualMachine/vm3');
    expect(vm3).toMatchObject({ action: 'create', destructive: false });
    expect(vm3!.fields.find((f) => f.path === 'user_data')!.after).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(found.stdout + found.stderr).not.toContain(secretText);
    ws.remove('vm3.yaml');
  });
});
