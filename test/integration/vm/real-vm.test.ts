import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceClient } from '../../../agent/openstack/service.ts';
import { testProject, type TestProject } from '../../support/context.ts';
import { registries, uniqueRepo } from '../../support/oci.ts';
import { answer, PORT, until } from './guest.ts';

// The OpenStack-level proof of the test bed's real compute host (test/testbed/openstack/real/README.md):
// a server in zone "real" boots the test image under QEMU (TCG), takes its address from Neutron's DHCP
// agent and its key and user data from the metadata service, and answers on its floating IP from this
// host; its security group opens and closes the port. Slow (a real boot): in the e2e project.
const exec = promisify(execFile);
const REAL_AZ = 'real';
const REAL_EXTERNAL = 'public-real';

let t: TestProject;
let admin: ServiceClient;
let dir: string;
const cleanup: (() => Promise<unknown>)[] = [];
const disks: Record<string, string> = {};

async function consoleLog(serverId: string): Promise<string> {
  const out = await t.ctx.apis.compute.post<{ output: string }>(`/servers/${serverId}/action`, { 'os-getConsoleOutput': {} }, [200]);
  return out.output;
}

function bench(what: string, seconds: number): void {
  console.log(`bench: real-vm ${what} ${seconds.toFixed(1)} s`);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ks-real-vm-'));
  const { stdout } = await exec('bash', ['test/testbed/vm-image/build.sh', 'v1', 'v2'], { maxBuffer: 1 << 20 });
  for (const line of stdout.trim().split('\n')) {
    const [v, path] = line.split(' ');
    if (v && path) disks[v] = path;
  }
  t = await testProject('realvm');
  admin = t.cloud.client('compute');
}, 300_000);

afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch((e: unknown) => console.error('cleanup:', e));
  await t?.dispose();
  rmSync(dir, { recursive: true, force: true });
}, 300_000);

describe('the real compute host (zone real): a VM that boots, a network that carries packets', () => {
  it('the test image is pushed to the registry as :v1 and :v2 with `kupenstack image push`', async () => {
    const repo = `${registries.plain}/${uniqueRepo('real-vm')}/test-image`;
    for (const v of ['v1', 'v2']) {
      expect(disks[v], `build.sh built ${v}`).toBeTruthy();
      const { stdout } = await exec(process.execPath, [
        'agent/cli/main.ts',
        'image',
        'push',
        disks[v]!,
        `${repo}:${v}`,
        '--insecure',
        '--quiet',
        '--os-distro',
        'busybox',
        '--arch',
        'x86_64',
      ]);
      expect(stdout).toMatch(/sha256:[a-f0-9]{64}/);
    }
  }, 120_000);

  it('boots in zone real: console shows v1, its DHCP address and the key from the metadata service; the host reaches it on its floating IP; the security group opens and closes the port', async () => {
    const { compute, image: glance, network } = t.ctx.apis;
    // image (v1), flavor, key pair
    const img = await glance.post<{ id: string }>('/images', { name: 'realvm-v1', disk_format: 'raw', container_format: 'bare' }, [201]);
    cleanup.push(() => glance.remove(`/images/${img.id}`));
    await glance.call('PUT', `/images/${img.id}/file`, { body: readFileSync(disks.v1!), headers: { 'content-type': 'application/octet-stream' } });
    const flavor = (
      await admin.post<{ flavor: { id: string } }>('/flavors', {
        flavor: { name: `realvm-${t.ctx.owner}`, ram: 256, vcpus: 1, disk: 1, 'os-flavor-access:is_public': false },
      })
    ).flavor;
    cleanup.push(() => admin.remove(`/flavors/${flavor.id}`));
    await admin.post(`/flavors/${flavor.id}/action`, { addTenantAccess: { tenant: t.ctx.projectId } });
    await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `realvm@${t.ctx.owner}`, '-f', join(dir, 'key')]);
    const publicKey = readFileSync(join(dir, 'key.pub'), 'utf8').trim();
    const keyName = `realvm-${t.ctx.owner}`;
    await compute.post('/os-keypairs', { keypair: { name: keyName, public_key: publicKey } });
    cleanup.push(() => compute.remove(`/os-keypairs/${keyName}`));

    // network, subnet and router in zone real (only those are wired to the real dataplane's agents)
    const net = (await network.post<{ network: { id: string } }>('/networks', { network: { name: 'realvm', availability_zone_hints: [REAL_AZ] } }))
      .network;
    cleanup.push(() => network.remove(`/networks/${net.id}`));
    const third = 100 + Math.floor(Math.random() * 100);
    const subnet = (
      await network.post<{ subnet: { id: string } }>('/subnets', { subnet: { network_id: net.id, ip_version: 4, cidr: `10.78.${third}.0/24` } })
    ).subnet;
    cleanup.push(() => network.remove(`/subnets/${subnet.id}`));
    const [external] = await network.list<{ id: string }>('/networks', 'networks', { name: REAL_EXTERNAL, 'router:external': 'true' });
    expect(external, `the test bed's external network ${REAL_EXTERNAL}`).toBeDefined();
    const router = (
      await network.post<{ router: { id: string } }>('/routers', {
        router: { name: 'realvm', availability_zone_hints: [REAL_AZ], external_gateway_info: { network_id: external!.id } },
      })
    ).router;
    cleanup.push(() => network.remove(`/routers/${router.id}`));
    await network.put(`/routers/${router.id}/add_router_interface`, { subnet_id: subnet.id });
    cleanup.push(() => network.put(`/routers/${router.id}/remove_router_interface`, { subnet_id: subnet.id }));

    // security group: the responder's port
    const sg = (await network.post<{ security_group: { id: string } }>('/security-groups', { security_group: { name: 'realvm' } })).security_group;
    cleanup.push(() => network.remove(`/security-groups/${sg.id}`));
    const openPort = async (): Promise<string> =>
      (
        await network.post<{ security_group_rule: { id: string } }>('/security-group-rules', {
          security_group_rule: {
            security_group_id: sg.id,
            direction: 'ingress',
            ethertype: 'IPv4',
            protocol: 'tcp',
            port_range_min: PORT,
            port_range_max: PORT,
          },
        })
      ).security_group_rule.id;
    const rule = await openPort();

    // the server, in zone real
    const t0 = Date.now();
    const server = (
      await compute.post<{ server: { id: string } }>('/servers', {
        server: {
          name: 'realvm',
          imageRef: img.id,
          flavorRef: flavor.id,
          availability_zone: REAL_AZ,
          key_name: keyName,
          networks: [{ uuid: net.id }],
          security_groups: [{ name: 'realvm' }],
          user_data: Buffer.from(`hello from ${t.ctx.owner}`).toString('base64'),
        },
      })
    ).server;
    cleanup.push(async () => {
      await compute.remove(`/servers/${server.id}`);
      await until('server deleted', async () => ((await compute.find(`/servers/${server.id}`)) ? undefined : true), 120_000);
    });
    const active = await until(
      'server ACTIVE',
      async () => {
        const s = (await compute.get<{ server: Record<string, unknown> }>(`/servers/${server.id}`)).server;
        if (s.status === 'ERROR') throw new Error(`server failed: ${JSON.stringify(s.fault)}`);
        return s.status === 'ACTIVE' ? s : undefined;
      },
      180_000,
    );
    expect(active['OS-EXT-AZ:availability_zone']).toBe(REAL_AZ);
    const activeAt = Date.now();
    const [port] = await network.list<{ id: string; fixed_ips: { ip_address: string }[] }>('/ports', 'ports', { device_id: server.id });
    const address = port!.fixed_ips[0]!.ip_address;
    const fip = (
      await network.post<{ floatingip: { id: string; floating_ip_address: string } }>('/floatingips', {
        floatingip: { floating_network_id: external!.id, port_id: port!.id },
      })
    ).floatingip;
    cleanup.push(() => network.remove(`/floatingips/${fip.id}`));

    // console: version, address, key, user data (the guest prints "ready" once its responder runs)
    const log = await until(
      'console: ready',
      async () => {
        const out = await consoleLog(server.id);
        return out.includes(`kupenstack-test-image v1 ready port ${PORT}`) ? out : undefined;
      },
      300_000,
      3000,
    );
    bench('boot (ACTIVE -> console ready)', (Date.now() - activeAt) / 1000);
    expect(log).toContain('kupenstack-test-image v1 booting');
    expect(log).toContain(`kupenstack-test-image v1 address ${address}`);
    expect(log).toContain(`kupenstack-test-image v1 key ${publicKey}`);
    expect(log).toContain(`kupenstack-test-image v1 user-data hello from ${t.ctx.owner}`);

    // the host reaches the responder on the floating IP
    const body = await until(`an answer on ${fip.floating_ip_address}:${PORT}`, () => answer(fip.floating_ip_address), 120_000);
    bench('POST /servers -> answers on its floating IP', (Date.now() - t0) / 1000);
    expect(body.trim()).toBe(`kupenstack-test-image v1 ${address}`);

    // removing the security group rule closes the port; adding it again opens it
    await network.remove(`/security-group-rules/${rule}`);
    let t1 = Date.now();
    await until('the port closed', async () => ((await answer(fip.floating_ip_address)) === undefined ? true : undefined), 90_000);
    bench('security group rule removed -> port closed', (Date.now() - t1) / 1000);
    await openPort();
    t1 = Date.now();
    await until('the port open again', () => answer(fip.floating_ip_address), 90_000);
    bench('security group rule added -> port open', (Date.now() - t1) / 1000);
  }, 900_000);
});
