import { spawn, type ChildProcess } from 'node:child_process';
import { kubectlPath } from '../../testbed/kubernetes/peer.ts';
import { adminKubeconfig, getJson, kubectl, kubectlOk, until } from './harness.ts';

/*
 * What real-cloud.test.ts asks of the cloud it installed, over the cloud's own REST APIs (each
 * service at its pod's address: the test bed has no kube-proxy) and its database (kubectl exec
 * into the mariadb pod): a token, the data an upgrade must keep, row counts, the restore Job.
 */

/** The first ready address of a Service of the cloud's namespace (its pod's IP). */
export function serviceAddress(ns: string, service: string): string {
  const endpoints = getJson<{ subsets?: { addresses?: { ip: string }[] }[] }>(['-n', ns, 'get', 'endpoints', service]);
  const ip = endpoints.subsets?.[0]?.addresses?.[0]?.ip;
  if (!ip || !/^10\.89\.0\.\d+$/.test(ip)) throw new Error(`Service ${ns}/${service} has no ready pod address (${JSON.stringify(endpoints.subsets ?? [])})`);
  return ip;
}

/** The admin password the install generated (the cloud's own Secret). */
export function adminPassword(ns: string, cloud: string): string {
  const secret = getJson<{ data: Record<string, string> }>(['-n', ns, 'get', 'secret', `kupenstack-cloud-${cloud}-secrets`]);
  return (JSON.parse(Buffer.from(secret.data['secrets.json']!, 'base64').toString('utf8')) as { identityAdmin: string }).identityAdmin;
}

export interface Api {
  keystone: string;
  glance: string;
  neutron: string;
  nova: string;
  placement: string;
}

export function apis(ns: string): Api {
  return {
    keystone: `http://${serviceAddress(ns, 'keystone-api')}:5000`,
    glance: `http://${serviceAddress(ns, 'glance-api')}:9292`,
    neutron: `http://${serviceAddress(ns, 'neutron-server')}:9696`,
    nova: `http://${serviceAddress(ns, 'nova-api')}:8774/v2.1`,
    placement: `http://${serviceAddress(ns, 'placement-api')}:8778`,
  };
}

/** A token of the admin user, scoped to a project of the default domain (admin unless said). */
export async function token(keystone: string, password: string, project = 'admin'): Promise<string> {
  const scope = { project: { name: project, domain: { id: 'default' } } };
  const res = await fetch(`${keystone}/v3/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password } } }, scope } }),
  });
  if (res.status !== 201) throw new Error(`Keystone ${keystone} refused a token for admin in ${project}: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return res.headers.get('x-subject-token')!;
}

/** One JSON call; a status other than `want` fails with the body. */
export async function call<T>(method: string, url: string, tok: string, body?: unknown, want = [200, 201, 202, 204], headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(url, { method, headers: { 'x-auth-token': tok, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!want.includes(res.status)) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : {}) as T;
}

/** What an upgrade must keep: a project, a network with a subnet in it, an image, a flavor, a VM. */
export interface Kept {
  project: string;
  network: string;
  image: string;
  flavor: string;
  server: string;
}

/** A server ACTIVE, or the test fails with its fault. */
export async function serverActive(nova: string, tok: string, id: string, timeoutMs = 600_000): Promise<void> {
  let last = '';
  await until(`server ${id} ACTIVE`, async () => {
    const s = (await call<{ server: { status: string; fault?: { message: string } } }>('GET', `${nova}/servers/${id}`, tok)).server;
    last = `${s.status}${s.fault ? `: ${s.fault.message}` : ''}`;
    if (s.status === 'ERROR') throw new Error(`server ${id} went to ERROR: ${last}`);
    return s.status === 'ACTIVE';
  }, timeoutMs, 3_000).catch((err: unknown) => {
    throw new Error(`${(err as Error).message} (last: ${last})`, { cause: err });
  });
}

/** Makes the data the upgrade must keep, as the admin, in a project of its own. */
export async function makeKept(api: Api, password: string, run: string): Promise<Kept> {
  const admin = await token(api.keystone, password);
  const project = (await call<{ project: { id: string } }>('POST', `${api.keystone}/v3/projects`, admin, { project: { name: `upgrade-${run}`, domain_id: 'default' } })).project.id;
  const users = await call<{ users: { id: string }[] }>('GET', `${api.keystone}/v3/users?name=admin`, admin);
  const roles = await call<{ roles: { id: string }[] }>('GET', `${api.keystone}/v3/roles?name=admin`, admin);
  await call('PUT', `${api.keystone}/v3/projects/${project}/users/${users.users[0]!.id}/roles/${roles.roles[0]!.id}`, admin);
  const tok = await token(api.keystone, password, `upgrade-${run}`);
  const network = (await call<{ network: { id: string } }>('POST', `${api.neutron}/v2.0/networks`, tok, { network: { name: `upgrade-${run}` } })).network.id;
  await call('POST', `${api.neutron}/v2.0/subnets`, tok, { subnet: { network_id: network, name: `upgrade-${run}`, cidr: '10.77.0.0/24', ip_version: 4 } });
  const image = (await call<{ id: string }>('POST', `${api.glance}/v2/images`, tok, { name: `upgrade-${run}`, disk_format: 'raw', container_format: 'bare' })).id;
  const res = await fetch(`${api.glance}/v2/images/${image}/file`, { method: 'PUT', headers: { 'x-auth-token': tok, 'content-type': 'application/octet-stream' }, body: Buffer.alloc(64 * 1024, 7) });
  if (res.status !== 204) throw new Error(`image upload: ${res.status} ${await res.text()}`);
  const flavor = (await call<{ flavor: { id: string } }>('POST', `${api.nova}/flavors`, admin, { flavor: { name: `upgrade-${run}`, ram: 64, vcpus: 1, disk: 1 } })).flavor.id;
  const server = (await call<{ server: { id: string } }>('POST', `${api.nova}/servers`, tok, { server: { name: `upgrade-${run}`, imageRef: image, flavorRef: flavor, networks: [{ uuid: network }] } })).server.id;
  await serverActive(api.nova, tok, server);
  return { project, network, image, flavor, server };
}

/** The mariadb server's pod. */
const mariadbPod = (ns: string): string => getJson<{ items: { metadata: { name: string } }[] }>(['-n', ns, 'get', 'pods', '-l', 'application=mariadb,component=server']).items[0]!.metadata.name;

/**
 * A database client left idle inside a transaction that read `db.table`, as a running API's pooled
 * connection can be: it holds the table's metadata lock until its transaction ends, so an online
 * schema change of that table waits for it. The mysql client reads its statements from a pipe the
 * caller keeps open (kill() ends it); the password from the container's environment.
 */
export function idleTransaction(ns: string, table: string): ChildProcess {
  const child = spawn(kubectlPath, ['--kubeconfig', adminKubeconfig, '-n', ns, 'exec', '-i', mariadbPod(ns), '-c', 'mariadb', '--', 'sh', '-c', 'export MYSQL_PWD="$MYSQL_ROOT_PASSWORD"; exec mysql -uroot -N'], { stdio: ['pipe', 'ignore', 'ignore'] });
  child.stdin.write(`BEGIN; SELECT COUNT(*) FROM ${table};\n`);
  return child;
}

/** The connections idle inside a transaction longer than `seconds`, as the server lists them. */
export function idleInTransaction(ns: string, seconds: number): number {
  const sql = `SELECT COUNT(*) FROM information_schema.innodb_trx t JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id WHERE p.command = 'Sleep' AND p.time > ${seconds}`;
  const out = kubectlOk(['-n', ns, 'exec', mariadbPod(ns), '-c', 'mariadb', '--', 'sh', '-c', `export MYSQL_PWD="$MYSQL_ROOT_PASSWORD"; mysql -uroot -N -e "${sql}"`]);
  return Number(out.trim());
}

/** `db.table → rows` of the databases named, counted exactly (COUNT(*)) in the live server. */
export function rowCounts(ns: string, dbs: string[]): Record<string, number> {
  const list = dbs.map((d) => `'${d}'`).join(',');
  // The password from the container's own environment, never on a command line.
  const script = [
    'export MYSQL_PWD="$MYSQL_ROOT_PASSWORD"',
    `mysql -uroot -N -e "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema IN (${list}) ORDER BY 1, 2" |`,
    'while read -r db t; do echo "$db.$t $(mysql -uroot -N -e "SELECT COUNT(*) FROM \\`$db\\`.\\`$t\\`")"; done',
  ].join('\n');
  return parseCounts(kubectlOk(['-n', ns, 'exec', mariadbPod(ns), '-c', 'mariadb', '--', 'sh', '-c', script]), dbs);
}

/** `db.table N` lines → a map, of the databases named only. */
export function parseCounts(text: string, dbs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^([\w$]+)\.([\w$]+) (\d+)$/gm)) if (dbs.includes(m[1]!)) out[`${m[1]}.${m[2]}`] = Number(m[3]);
  return out;
}

/**
 * The restore Job of test/charts/README.md: the mariadb image, the chart's restore script and
 * the backup claim; it loads the backup file into a scratch server in its own pod and prints
 * each table's rows. Returns its log.
 */
export async function restoreIntoScratch(ns: string, file: string, placement: { nodeSelector: Readonly<Record<string, string>>; tolerations: readonly unknown[] }, image: string): Promise<string> {
  const name = `mariadb-restore-${Date.now().toString(36)}`;
  const job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: ns },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          nodeSelector: placement.nodeSelector,
          tolerations: placement.tolerations,
          containers: [{ name: 'restore', image, command: ['/tmp/bin/restore_mariadb.sh'], env: [{ name: 'BACKUP', value: file }], volumeMounts: [{ name: 'bin', mountPath: '/tmp/bin', readOnly: true }, { name: 'backup', mountPath: '/var/backup', readOnly: true }] }],
          volumes: [{ name: 'bin', configMap: { name: 'mariadb-bin', defaultMode: 0o555 } }, { name: 'backup', persistentVolumeClaim: { claimName: 'mariadb-backup', readOnly: true } }],
        },
      },
    },
  };
  kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(job) });
  let state = '';
  await until(`restore Job ${name} to finish`, () => {
    const j = getJson<{ status: { succeeded?: number; failed?: number } }>(['-n', ns, 'get', 'job', name]);
    state = JSON.stringify(j.status);
    return Promise.resolve((j.status.succeeded ?? 0) > 0 || (j.status.failed ?? 0) > 0);
  }, 900_000, 3_000);
  const log = kubectl(['-n', ns, 'logs', `job/${name}`]).stdout;
  if (!state.includes('succeeded')) throw new Error(`restore Job ${name} failed (${state}):\n${log.slice(-2000)}`);
  return log;
}
