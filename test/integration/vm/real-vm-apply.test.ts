import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../../../agent/openstack/service.ts';
import { ownedProjects } from '../../../agent/act/projects.ts';
import { Workspace } from '../../support/apply.ts';
import { registries, uniqueRepo } from '../../support/oci.ts';
import { answer, PORT, until } from './guest.ts';

// KupenStack end to end on the test bed's real compute host (test/testbed/openstack/real/README.md), as
// a tenant's repository would have it: a network, subnet and router in zone real, a security group, a
// key pair, an Image following an OCI tag and a VirtualMachine in zone real with a floating IP, applied
// by the standalone engine; then the security group rule removed and restored, and the tag moved to v2
// with onImageUpdate: rebuild. Slow (real boots under TCG): in the e2e project.
const exec = promisify(execFile);
const PUBLIC_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPE1q7wup0y7h3qDR+DsZXgF+eld7w0kZSWOPGSe3hoH realvm@kupenstack.test';

let ws: Workspace;
let compute: ServiceClient;
let network: ServiceClient;
const disks: Record<string, string> = {};
const repo = `${registries.plain}/${uniqueRepo('real-vm-apply')}/test-image`;
const ns = `realvm-${Date.now().toString(36)}`;

function bench(what: string, seconds: number): void {
  console.log(`bench: real-vm-apply ${what} ${seconds.toFixed(1)} s`);
}

async function push(version: string, tag: string): Promise<void> {
  await exec(process.execPath, [
    'agent/cli/main.ts',
    'image',
    'push',
    disks[version]!,
    `${repo}:${tag}`,
    '--insecure',
    '--quiet',
    '--os-distro',
    'busybox',
    '--arch',
    'x86_64',
  ]);
}

function manifests(sgOpen: boolean): Record<string, string> {
  const rule = sgOpen ? `\n    - {direction: ingress, protocol: tcp, portRangeMin: ${PORT}, portRangeMax: ${PORT}, remoteIPPrefix: 0.0.0.0/0}` : '';
  const doc = (kind: string, name: string, spec: string): string =>
    `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata: {name: ${name}, namespace: ${ns}}\nspec:\n${spec}\n`;
  return {
    [`tenants/${ns}/all.yaml`]: [
      doc('Network', 'net', '  availabilityZoneHints: [real]'),
      doc('Subnet', 'sub', '  networkRef: {name: net}\n  cidr: 10.79.0.0/24'),
      doc(
        'Router',
        'edge',
        '  availabilityZoneHints: [real]\n  externalGateway: {network: {filter: {name: public-real}}}\n  interfaces:\n    - subnetRef: {name: sub}',
      ),
      doc('SecurityGroup', 'web', `  rules:\n    - {direction: ingress, protocol: icmp, remoteIPPrefix: 0.0.0.0/0}${rule}`),
      doc('KeyPair', 'key', `  publicKey: ${PUBLIC_KEY}`),
      doc('Flavor', 'tiny', '  vcpus: 1\n  ram: 256\n  disk: 1'),
      doc('Image', 'test-image', `  source:\n    oci: {repository: ${repo}, tag: stable, insecure: true}\n  diskFormat: raw\n  keep: 2`),
      doc(
        'VirtualMachine',
        'vm',
        '  availabilityZone: real\n  flavorRef: {name: tiny}\n  imageRef: {name: test-image}\n  keyPairRef: {name: key}\n  networks:\n    - networkRef: {name: net}\n  securityGroupRefs:\n    - {name: web}\n  onImageUpdate: rebuild\n  heal: {strategy: reboot, backoff: 1s}\n  userData: hello-from-git',
      ),
      doc('FloatingIP', 'vm-fip', '  externalNetwork: {network: {filter: {name: public-real}}}\n  vmRef: {name: vm}'),
    ].join('---\n'),
  };
}

async function apply(): Promise<void> {
  const outcome = await ws.apply({ prune: true });
  const errors = outcome.report?.errors ?? [];
  if (errors.length) throw new Error(`apply failed: ${errors.map((e) => e.message).join('; ')}\n${ws.log.slice(-20).join('\n')}`);
}

/** The workspace's server "vm", its fixed address and its floating IP. */
async function server(): Promise<{ id: string; address: string; fip: string }> {
  const projects = new Set((await ownedProjects(ws.cloud, ws.owner)).map((p) => p.id));
  const servers = await compute.list<{ id: string; name: string; tenant_id: string }>('/servers/detail', 'servers', { all_tenants: 'true', name: '^vm$' });
  const mine = servers.find((x) => x.name === 'vm' && projects.has(x.tenant_id));
  if (!mine) throw new Error('no server "vm" in the workspace\'s project');
  const [port] = await network.list<{ id: string; fixed_ips: { ip_address: string }[] }>('/ports', 'ports', { device_id: mine.id });
  const [fip] = port ? await network.list<{ floating_ip_address: string }>('/floatingips', 'floatingips', { port_id: port.id }) : [];
  if (!port || !fip) throw new Error(`server ${mine.id} has no port with a floating IP`);
  return { id: mine.id, address: port.fixed_ips[0]!.ip_address, fip: fip.floating_ip_address };
}

async function consoleSays(id: string, text: string, timeoutMs: number): Promise<string> {
  return until(
    `console: ${text}`,
    async () => {
      const out = (await compute.post<{ output: string }>(`/servers/${id}/action`, { 'os-getConsoleOutput': {} }, [200])).output;
      return out.includes(text) ? out : undefined;
    },
    timeoutMs,
    3000,
  );
}

beforeAll(async () => {
  const { stdout } = await exec('bash', ['test/testbed/vm-image/build.sh', 'v1', 'v2']);
  for (const line of stdout.trim().split('\n')) {
    const [v, path] = line.split(' ');
    if (v && path) disks[v] = path;
  }
  ws = new Workspace();
  compute = ws.cloud.client('compute');
  network = ws.cloud.client('network');
  await push('v1', 'stable');
}, 300_000);

afterAll(async () => {
  await ws?.dispose();
}, 600_000);

describe('KupenStack on the real compute host: the promise end to end (standalone apply)', () => {
  let vm: { id: string; address: string; fip: string };

  it('apply → the VM boots v1 in zone real, shows its address and key, and answers on its floating IP', async () => {
    ws.write(manifests(true));
    const t0 = Date.now();
    await apply();
    bench('apply', (Date.now() - t0) / 1000);
    vm = await server();
    const log = await consoleSays(vm.id, `kupenstack-test-image v1 ready port ${PORT}`, 300_000);
    expect(log).toContain(`kupenstack-test-image v1 address ${vm.address}`);
    expect(log).toContain(`kupenstack-test-image v1 key ${PUBLIC_KEY}`);
    expect(log).toContain('kupenstack-test-image v1 user-data hello-from-git');
    const body = await until(`an answer on ${vm.fip}`, () => answer(vm.fip), 120_000);
    bench('apply -> answers on its floating IP', (Date.now() - t0) / 1000);
    expect(body.trim()).toBe(`kupenstack-test-image v1 ${vm.address}`);
  }, 900_000);

  it('the security group rule removed in Git closes the port; restored, it opens again', async () => {
    ws.write(manifests(false));
    await apply();
    await until('the port closed', async () => ((await answer(vm.fip)) === undefined ? true : undefined), 90_000);
    ws.write(manifests(true));
    await apply();
    expect(await until('the port open again', () => answer(vm.fip), 90_000)).toContain('v1');
  }, 600_000);

  it('the tag moved to v2 with onImageUpdate: rebuild → the VM boots v2, same floating IP', async () => {
    await push('v2', 'stable');
    const t0 = Date.now();
    await apply();
    const after = await server();
    expect(after.fip).toBe(vm.fip);
    await consoleSays(after.id, `kupenstack-test-image v2 ready port ${PORT}`, 300_000);
    const body = await until('v2 on the floating IP', async () => ((await answer(vm.fip))?.includes('v2') ? await answer(vm.fip) : undefined), 120_000);
    bench('tag move -> v2 answers', (Date.now() - t0) / 1000);
    expect(body?.trim()).toBe(`kupenstack-test-image v2 ${after.address}`);
  }, 900_000);

  it('kill -9 of its QEMU process: Nova reports SHUTOFF, the engine brings it back (heal or power state) and it answers again', async () => {
    const current = await server();
    const raw = (await compute.get<{ server: Record<string, unknown> }>(`/servers/${current.id}`)).server;
    const domain = String(raw['OS-EXT-SRV-ATTR:instance_name']);
    // the guest's QEMU, started by the test bed's libvirtd: its pid file names it
    const pid = Number(readFileSync(`/run/libvirt/qemu/${domain}.pid`, 'utf8').trim());
    expect(pid).toBeGreaterThan(1);
    const logFrom = ws.log.length;
    process.kill(pid, 'SIGKILL');
    const t0 = Date.now();
    await until(
      'Nova reports SHUTOFF',
      async () => ((await compute.get<{ server: { status: string } }>(`/servers/${current.id}`)).server.status === 'SHUTOFF' ? true : undefined),
      180_000,
    );
    bench('kill -9 -> Nova reports SHUTOFF', (Date.now() - t0) / 1000);
    const t1 = Date.now();
    const body = await until(
      'healed and answering',
      async () => {
        await apply();
        return (await answer(current.fip)) ?? undefined;
      },
      420_000,
      5000,
    );
    bench('SHUTOFF -> healed and answering (applies every ~5 s)', (Date.now() - t1) / 1000);
    expect(body.trim()).toBe(`kupenstack-test-image v2 ${current.address}`);
    // what the engine said of the VM after the kill: a heal (reboot) or the declared power state restored
    const said = ws.log.slice(logFrom).filter((l) => l.includes(`${ns}/VirtualMachine/vm`));
    console.log(`after kill -9, the engine logged:\n${said.join('\n')}`);
    expect(said.some((l) => /^(heal|update)\b/.test(l))).toBe(true);
  }, 900_000);
});
