import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { testCloudName } from './context.ts';

const run = promisify(execFile);

/** One `openstack` CLI call as the bed's admin (clouds.yaml entry), its JSON answer parsed. */
export async function openstack(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run('openstack', ['--os-cloud', testCloudName, ...args, '-f', 'json'], { maxBuffer: 16 << 20 });
  return stdout.trim() === '' ? {} : (JSON.parse(stdout) as Record<string, unknown>);
}

async function plain(...args: string[]): Promise<void> {
  await run('openstack', ['--os-cloud', testCloudName, ...args]);
}

export interface BuiltCloud {
  projects: { alpha: string; beta: string };
  ids: Record<string, string>;
  /** Secrets planted in the cloud (a password in the server's user data, that user data as Nova returns it, an application credential's secret): none may reach an export, a plan or a log. */
  planted: string[];
}

/**
 * A small running cloud made the way people make one, with the `openstack`
 * CLI and no KupenStack: two projects; in alpha a network shared with every
 * project and a private one, a router to the bed's external network with
 * both subnets as interfaces and a static route, two security groups whose
 * rules name each other, a port with fixed addresses and a scratch port;
 * in beta a private network with a subnet, and a port on alpha's shared network.
 * Then Nova, Glance and Cinder in alpha: a private flavor only alpha may use,
 * a key pair of the admin user, an image, a server (Nova's fake driver) on the
 * app network with a fixed address, the web group and the key, a volume
 * attached to it, a floating IP on its NIC, and quotas other than the defaults.
 * Then Octavia in alpha: a load balancer on the app subnet with a listener on
 * :80, its pool, two members (the server's address and one that is no VM's)
 * and an HTTP monitor, each made with `openstack loadbalancer ... --wait`.
 * Calls in a project's scope go as the admin user with a role in it, as a
 * person with the CLI would. A second server, `orphan`, booted from an image
 * deleted since. Planted secrets: the server's user data sets a
 * password, and the admin user has an application credential in alpha.
 */
export async function buildCloud(prefix: string, ids: Record<string, string> = {}): Promise<BuiltCloud> {
  // The caller's record, filled as objects are made: a build that fails or times out half-way is still cleaned up.
  const id = async (key: string, ...args: string[]): Promise<string> => (ids[key] = String((await openstack(...args)).id));
  const alpha = await id('project-alpha', 'project', 'create', `${prefix}alpha`, '--description', 'built by hand');
  const beta = await id('project-beta', 'project', 'create', `${prefix}beta`);
  await id('net-shared', 'network', 'create', '--project', alpha, '--share', 'Shared Net');
  await id('subnet-shared', 'subnet', 'create', '--project', alpha, '--network', ids['net-shared']!, '--subnet-range', '10.70.0.0/24', 'shared-subnet');
  await id('net-app', 'network', 'create', '--project', alpha, '--description', 'application tier', 'app');
  await id('subnet-app', 'subnet', 'create', '--project', alpha, '--network', ids['net-app']!, '--subnet-range', '10.71.0.0/24', '--dns-nameserver', '10.71.0.53', 'app-subnet');
  await id('router', 'router', 'create', '--project', alpha, 'edge');
  await plain('router', 'set', ids.router!, '--external-gateway', 'public');
  await plain('router', 'add', 'subnet', ids.router!, ids['subnet-app']!);
  await plain('router', 'add', 'subnet', ids.router!, ids['subnet-shared']!);
  await plain('router', 'set', ids.router!, '--route', 'destination=192.168.50.0/24,gateway=10.71.0.254');
  await id('sg-web', 'security', 'group', 'create', '--project', alpha, '--description', 'web tier', 'web');
  await id('sg-db', 'security', 'group', 'create', '--project', alpha, 'db');
  await plain('security', 'group', 'rule', 'create', '--project', alpha, '--ingress', '--protocol', 'tcp', '--dst-port', '443', '--remote-ip', '0.0.0.0/0', ids['sg-web']!);
  await plain('security', 'group', 'rule', 'create', '--project', alpha, '--ingress', '--protocol', 'tcp', '--dst-port', '5432', '--remote-group', ids['sg-web']!, ids['sg-db']!);
  await plain('security', 'group', 'rule', 'create', '--project', alpha, '--ingress', '--protocol', 'tcp', '--dst-port', '8080', '--remote-group', ids['sg-db']!, ids['sg-web']!);
  await id('port-vip', 'port', 'create', '--project', alpha, '--network', ids['net-app']!, '--fixed-ip', `subnet=${ids['subnet-app']!},ip-address=10.71.0.10`, '--security-group', ids['sg-web']!, 'vip');
  await id('port-scratch', 'port', 'create', '--project', alpha, '--network', ids['net-app']!, 'scratch');
  await id('net-beta', 'network', 'create', '--project', beta, 'data');
  await id('subnet-beta', 'subnet', 'create', '--project', beta, '--network', ids['net-beta']!, '--subnet-range', '10.72.0.0/24', '--gateway', 'none', 'data-subnet');
  await id('port-beta', 'port', 'create', '--project', beta, '--network', ids['net-shared']!, '--fixed-ip', `subnet=${ids['subnet-shared']!},ip-address=10.70.0.20`, 'on-shared');

  const inAlpha = ['--os-project-id', alpha];
  await plain('role', 'add', '--user', 'admin', '--project', alpha, 'admin');
  await id('flavor', 'flavor', 'create', '--private', '--project', alpha, '--vcpus', '1', '--ram', '64', '--disk', '1', '--description', 'the small one', `${prefix}secret`);
  const scratch = mkdtempSync(join(tmpdir(), 'ks-build-'));
  try {
    // A fresh public key (its private half is dropped: nothing here ever logs in).
    const der = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
    const blob = Buffer.concat([Buffer.from([0, 0, 0, 11]), Buffer.from('ssh-ed25519'), Buffer.from([0, 0, 0, 32]), der.subarray(der.length - 32)]);
    writeFileSync(join(scratch, 'ops.pub'), `ssh-ed25519 ${blob.toString('base64')} ops@example\n`);
    ids.keypair = String((await openstack('keypair', 'create', '--public-key', join(scratch, 'ops.pub'), `${prefix}ops`)).name);
    writeFileSync(join(scratch, 'disk.raw'), Buffer.alloc(1 << 20));
    await id('image', 'image', 'create', '--project', alpha, '--disk-format', 'raw', '--container-format', 'bare', '--min-ram', '32', '--property', 'os_distro=cirros', '--file', join(scratch, 'disk.raw'), 'tiny');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  await id('volume', ...inAlpha, 'volume', 'create', '--size', '1', '--description', 'app data', 'data');
  const password = `ks-planted-pw-${randomBytes(6).toString('hex')}`;
  const userData = `#cloud-config\nchpasswd:\n  list: |\n    root:${password}\n  expire: false\n`;
  const secretDir = mkdtempSync(join(tmpdir(), 'ks-build-'));
  try {
    writeFileSync(join(secretDir, 'user-data'), userData, { mode: 0o600 });
    await id('server', ...inAlpha, 'server', 'create', '--flavor', ids.flavor!, '--image', ids.image!, '--nic', `net-id=${ids['net-app']!},v4-fixed-ip=10.71.0.30`, '--security-group', ids['sg-web']!, '--key-name', ids.keypair, '--property', 'role=web', '--user-data', join(secretDir, 'user-data'), '--wait', 'web-1');
  } finally {
    rmSync(secretDir, { recursive: true, force: true });
  }
  // A server whose image was deleted after it booted: no manifest can name its image, so the export leaves it out with the reason.
  const scratchDisk = mkdtempSync(join(tmpdir(), 'ks-build-'));
  try {
    writeFileSync(join(scratchDisk, 'disk.raw'), Buffer.alloc(1 << 20));
    await id('image-gone', 'image', 'create', '--project', alpha, '--disk-format', 'raw', '--container-format', 'bare', '--file', join(scratchDisk, 'disk.raw'), 'gone');
  } finally {
    rmSync(scratchDisk, { recursive: true, force: true });
  }
  await id('server-orphan', ...inAlpha, 'server', 'create', '--flavor', ids.flavor!, '--image', ids['image-gone']!, '--nic', `net-id=${ids['net-app']!}`, '--wait', 'orphan');
  await plain('image', 'delete', ids['image-gone']!);
  const credentialSecret = `ks-planted-ac-${randomBytes(6).toString('hex')}`;
  await id('appcred', ...inAlpha, 'application', 'credential', 'create', '--secret', credentialSecret, '--description', 'a backup tool', `${prefix}backup`);
  await waitFor(async () => (await openstack(...inAlpha, 'volume', 'show', ids.volume!)).status === 'available', 'volume available');
  await plain(...inAlpha, 'server', 'add', 'volume', ids.server!, ids.volume!);
  await waitFor(async () => (await openstack(...inAlpha, 'volume', 'show', ids.volume!)).status === 'in-use', 'volume attached');
  const [nic] = (await openstack('port', 'list', '--device-id', ids.server!)) as unknown as { ID: string }[];
  await id('fip', 'floating', 'ip', 'create', '--project', alpha, '--description', 'web entry', '--port', nic!.ID, '--fixed-ip-address', '10.71.0.30', 'public');
  await plain('quota', 'set', '--instances', '7', '--ports', '77', '--volumes', '5', alpha);
  await id('lb', 'loadbalancer', 'create', '--project', alpha, '--vip-subnet-id', ids['subnet-app']!, '--description', 'front door', '--name', 'web-lb', '--wait');
  await id('listener', 'loadbalancer', 'listener', 'create', '--name', 'http', '--protocol', 'HTTP', '--protocol-port', '80', '--wait', ids.lb!);
  await id('pool', 'loadbalancer', 'pool', 'create', '--name', 'http', '--listener', ids.listener!, '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait');
  for (const [name, address] of [['web-1', '10.71.0.30'], ['backup', '10.71.0.99']] as const)
    await id(`member-${name}`, 'loadbalancer', 'member', 'create', '--name', name, '--address', address, '--protocol-port', '8080', '--subnet-id', ids['subnet-app']!, '--wait', ids.pool!);
  await id('monitor', 'loadbalancer', 'healthmonitor', 'create', '--name', 'http', '--type', 'HTTP', '--delay', '5', '--timeout', '3', '--max-retries', '3', '--url-path', '/healthz', '--wait', ids.pool!);
  return { projects: { alpha, beta }, ids, planted: [password, Buffer.from(userData).toString('base64'), credentialSecret] };
}

/** Polls a condition of the cloud every second, for at most two minutes. */
async function waitFor(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 120; i++) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
  throw new Error(`buildCloud: ${what} did not happen within 120 s`);
}

/** Deletes what buildCloud made (and what a test added in its projects), tolerating what is gone. */
export async function destroyCloud(built: Partial<BuiltCloud> & { ids: Record<string, string> }): Promise<void> {
  const quiet = (p: Promise<unknown>): Promise<unknown> => p.catch(() => undefined);
  const projects = [built.ids['project-beta'], built.ids['project-alpha']].filter((x): x is string => x !== undefined);
  // The load balancer and every child (a test may have added some) before the subnet it stands on.
  if (built.ids.lb) await quiet(plain('loadbalancer', 'delete', '--cascade', '--wait', built.ids.lb));
  if (built.ids.appcred) await quiet(plain('application', 'credential', 'delete', built.ids.appcred));
  if (built.ids.fip) await quiet(plain('floating', 'ip', 'delete', built.ids.fip));
  if (built.ids.server) await quiet(plain('server', 'delete', '--wait', built.ids.server));
  if (built.ids['server-orphan']) await quiet(plain('server', 'delete', '--wait', built.ids['server-orphan']));
  if (built.ids['image-gone']) await quiet(plain('image', 'delete', built.ids['image-gone']));
  if (built.ids.volume) {
    await quiet(waitFor(async () => (await openstack('volume', 'show', built.ids.volume!)).status === 'available', 'volume detached'));
    await quiet(plain('volume', 'delete', built.ids.volume));
  }
  if (built.ids.image) await quiet(plain('image', 'delete', built.ids.image));
  if (built.ids.flavor) await quiet(plain('flavor', 'delete', built.ids.flavor));
  if (built.ids.keypair) await quiet(plain('keypair', 'delete', built.ids.keypair));
  if (built.ids.router) {
    // Neutron refuses to remove an interface a static route goes through: the routes go first.
    await quiet(plain('router', 'set', '--no-route', built.ids.router));
    for (const s of ['subnet-app', 'subnet-shared']) if (built.ids[s]) await quiet(plain('router', 'remove', 'subnet', built.ids.router, built.ids[s]));
    await quiet(plain('router', 'delete', built.ids.router));
  }
  for (const p of projects) {
    for (const kind of [['port'], ['network']] as const) {
      const list = (await openstack(...kind, 'list', '--project', p)) as unknown as { ID: string }[];
      for (const o of list) await quiet(plain(...kind, 'delete', o.ID));
    }
    const groups = (await openstack('security', 'group', 'list', '--project', p)) as unknown as { ID: string }[];
    for (const g of groups) await quiet(plain('security', 'group', 'delete', g.ID));
  }
  for (const p of projects) await quiet(plain('project', 'delete', p));
}
