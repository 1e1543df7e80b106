import { execFile } from 'node:child_process';
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
}

/**
 * A small running cloud made the way people make one, with the `openstack`
 * CLI and no KupenStack: two projects; in alpha a network shared with every
 * project and a private one, a router to the bed's external network with
 * both subnets as interfaces and a static route, two security groups whose
 * rules name each other, a port with fixed addresses and a scratch port;
 * in beta a private network with a subnet, and a port on alpha's shared network.
 */
export async function buildCloud(prefix: string): Promise<BuiltCloud> {
  const ids: Record<string, string> = {};
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
  return { projects: { alpha, beta }, ids };
}

/** Deletes what buildCloud made (and what a test added in its projects), tolerating what is gone. */
export async function destroyCloud(built: Partial<BuiltCloud> & { ids: Record<string, string> }): Promise<void> {
  const quiet = (p: Promise<unknown>): Promise<unknown> => p.catch(() => undefined);
  const projects = [built.ids['project-beta'], built.ids['project-alpha']].filter((x): x is string => x !== undefined);
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
