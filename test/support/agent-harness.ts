import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { defaultConfig } from '../../agent/config/config.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { SyncStatus } from '../../agent/sync/status.ts';
import { agentFlags } from './agent-flags.ts';
import { testCloudName } from './context.ts';
import { peers } from './peers.ts';

const gitAuthHeader = `Authorization: Basic ${Buffer.from(`${peers.git.user}:${peers.git.password}`).toString('base64')}`;
const repoRoot = `${process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed'}/git/repos`;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export const head = (kind: string, name: string, ns: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n`;

/** A repository on the test bed's Git server with a working clone to commit and push from (git CLI, throw-away HOME). */
export class TestRepo {
  readonly name: string;
  readonly url: string;
  readonly work: string;
  private readonly home: string;

  constructor(label: string) {
    this.name = `${label}-${randomBytes(4).toString('hex')}`;
    const made = spawnSync('bash', ['test/testbed/git/new-repo.sh', this.name], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`new-repo.sh failed: ${made.stderr}`);
    this.url = made.stdout.trim();
    // Let a test delete `main` (the bare repository's HEAD), as a forge allows for any branch but its default.
    const bare = spawnSync('git', ['-C', join(repoRoot, `${this.name}.git`), 'config', 'receive.denyDeleteCurrent', 'ignore']);
    if (bare.status !== 0) throw new Error(`git config on the bare repository failed: ${bare.stderr.toString()}`);
    const dir = mkdtempSync(join(tmpdir(), 'ks-repo-'));
    this.home = join(dir, 'home');
    this.work = join(dir, 'work');
    mkdirSync(this.home);
    this.git(['init', '-q', '--initial-branch=main', this.work], dirname(this.work));
    this.git(['remote', 'add', 'origin', this.url]);
  }

  git(args: string[], cwd = this.work): string {
    const r = spawnSync('git', ['-c', `http.extraHeader=${gitAuthHeader}`, '-c', 'user.name=KupenStack Test', '-c', 'user.email=test@kupenstack.invalid', '-c', 'commit.gpgsign=false', ...args], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, HOME: this.home, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' },
    });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  }

  write(files: Record<string, string | null>): void {
    for (const [path, text] of Object.entries(files)) {
      const full = join(this.work, path);
      if (text === null) rmSync(full, { force: true });
      else {
        mkdirSync(dirname(full), { recursive: true });
        writeFileSync(full, text);
      }
    }
  }

  /** Commits everything and returns the commit. */
  commit(message: string): string {
    this.git(['add', '-A']);
    this.git(['commit', '-q', '--allow-empty', '-m', message]);
    return this.git(['rev-parse', 'HEAD']);
  }

  push(options: { force?: boolean; ref?: string } = {}): void {
    this.git(['push', '-q', ...(options.force ? ['--force'] : []), 'origin', options.ref ?? 'HEAD:refs/heads/main']);
  }

  /**
   * A post-receive hook in the bare repository that sends what Gitea sends on
   * a push (X-Gitea-Event/Delivery/Signature, HMAC-SHA256 of the body) to the
   * agent, so `git push` itself triggers the agent as a forge would.
   */
  /** The bare repository on the test bed's Git server (its hooks/ live here). */
  get bareDir(): string {
    return join(repoRoot, `${this.name}.git`);
  }

  installPushHook(hookUrl: string, secret: string): void {
    const hook = join(repoRoot, `${this.name}.git`, 'hooks', 'post-receive');
    writeFileSync(
      hook,
      `#!/bin/sh
# Test bed: a Gitea-style push webhook, signed like Gitea signs it.
while read old new ref; do
  body=$(printf '{"ref":"%s","before":"%s","after":"%s","repository":{"clone_url":"%s"}}' "$ref" "$old" "$new" '${this.url}')
  sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac '${secret}' -r | cut -d' ' -f1)
  id=$(cat /proc/sys/kernel/random/uuid)
  curl -s -m 5 -o /dev/null -H 'Content-Type: application/json' -H 'X-Gitea-Event: push' -H "X-Gitea-Delivery: $id" -H "X-Gitea-Signature: $sig" --data-binary "$body" '${hookUrl}' || true
done
`,
    );
    chmodSync(hook, 0o755);
  }

  dispose(): void {
    rmSync(dirname(this.work), { recursive: true, force: true });
    rmSync(join(repoRoot, `${this.name}.git`), { recursive: true, force: true });
  }
}

export interface LogLine {
  time: string;
  level: number;
  msg: string;
  sync?: string;
  [key: string]: unknown;
}

/** `kupenstack agent` as a child process with its own config, state dir and port, and its JSON log lines. */
export class AgentProcess {
  readonly dir = mkdtempSync(join(tmpdir(), 'ks-agent-'));
  readonly configFile = join(this.dir, 'kupenstack.yaml');
  readonly stateDir = join(this.dir, 'state');
  readonly owner = `a${randomBytes(4).toString('hex')}`;
  readonly lines: LogLine[] = [];
  port = 0;
  private child?: ChildProcess;
  private readonly watchers: { test: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  private exited?: Promise<number | null>;

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Writes kupenstack.yaml; each Sync gets the owner `<owner>-<name>` and projects `<owner>-<namespace>`. */
  configure(syncs: Record<string, unknown>[]): void {
    writeFileSync(this.configFile, stringify({ cloud: testCloudName, owner: this.owner, projectPrefix: `${this.owner}-`, stateDir: this.stateDir, readyTimeoutSeconds: 120, syncs: syncs.map((s) => ({ owner: `${this.owner}-${String(s.name)}`, ...s })) }));
  }

  /** `args`: more flags (e.g. --kubeconfig). */
  async start(env: Record<string, string> = {}, args: string[] = []): Promise<void> {
    if (!this.port) this.port = await freePort();
    const child = spawn(process.execPath, [...agentFlags(), 'agent/cli/main.ts', 'agent', '--config', this.configFile, '--listen', `127.0.0.1:${this.port}`, '--log-level', 'debug', '--shutdown-grace', '10s', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    this.child = child;
    let buf = '';
    child.stdout.on('data', (b: Buffer) => {
      buf += b.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let parsed: LogLine;
        try {
          parsed = JSON.parse(line) as LogLine;
        } catch {
          parsed = { time: '', level: 50, msg: `unparsed: ${line}` };
        }
        this.lines.push(parsed);
        // Watchers run here, in the handler that reads the line: a test acting on a line does so before the next read.
        for (const w of [...this.watchers]) {
          if (w.test(parsed)) {
            this.watchers.splice(this.watchers.indexOf(w), 1);
            w.resolve(parsed);
          }
        }
      }
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    void this.exited.then((code) => {
      if (code) this.lines.push({ time: '', level: 60, msg: `exited ${code}: ${stderr}` });
    });
    // Up when /healthz answers (30 s: on the shared 2-core test bed a cold start of the .ts sources can pass 10 s).
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) throw new Error(`the agent exited: ${stderr}`);
      if (await this.get('/healthz').then((r) => r.ok, () => false)) return;
      await sleep(100);
    }
    throw new Error(`the agent did not answer /healthz: ${stderr}`);
  }

  get(path: string, init?: RequestInit): Promise<Response> {
    return fetch(`${this.base}${path}`, init);
  }

  async status(name: string): Promise<SyncStatus & { nextRunAt?: string }> {
    const body = (await (await this.get('/status')).json()) as { syncs: SyncStatus[] };
    const s = body.syncs.find((x) => x.name === name);
    if (!s) throw new Error(`no Sync ${name} in /status`);
    return s;
  }

  ready(s: SyncStatus): { status: string; reason: string; message: string } {
    return s.conditions.find((c) => c.type === 'Ready') ?? { status: 'Unknown', reason: '', message: '' };
  }

  /** Polls the status until `test` holds; fails with the last status and the log tail. */
  async waitFor(name: string, what: string, test: (s: SyncStatus) => boolean, timeoutMs = 120_000): Promise<SyncStatus> {
    const until = Date.now() + timeoutMs;
    let last: SyncStatus | undefined;
    while (Date.now() < until) {
      last = await this.status(name).catch(() => last);
      if (last && test(last)) return last;
      await sleep(200);
    }
    throw new Error(`timed out waiting for ${name}: ${what}\nstatus: ${JSON.stringify(last, null, 2)}\nlog tail:\n${this.tail()}`);
  }

  tail(n = 40): string {
    return this.lines
      .slice(-n)
      .map((l) => `${l.time} ${l.level} ${l.sync ?? ''} ${l.msg} ${JSON.stringify({ ...l, time: undefined, level: undefined, msg: undefined, sync: undefined, app: undefined, pid: undefined, hostname: undefined })}`)
      .join('\n');
  }

  /**
   * Resolves with the first line from now on that passes `test`, from inside
   * the stdout handler, so `then` code (e.g. a SIGSTOP) runs before any later
   * line is read.
   */
  nextLine(what: string, test: (l: LogLine) => boolean, timeoutMs = 120_000): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no log line ${what} within ${timeoutMs} ms:\n${this.tail()}`)), timeoutMs);
      this.watchers.push({ test, resolve: (l) => (clearTimeout(timer), resolve(l)) });
    });
  }

  /** Sends a signal without waiting for an exit (SIGSTOP, SIGCONT). */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** The exit code once the process has exited (null: killed by a signal). */
  exit(): Promise<number | null> {
    return this.exited ?? Promise.resolve(null);
  }

  kill(signal: NodeJS.Signals): Promise<number | null> {
    this.child?.kill(signal);
    return this.exited ?? Promise.resolve(null);
  }

  /** Stops the agent, prunes what each Sync's owner created and deletes its projects. */
  async dispose(syncNames: string[]): Promise<void> {
    if (this.child && this.child.exitCode === null) await this.kill('SIGKILL');
    const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
    const empty = join(this.dir, 'empty');
    mkdirSync(empty, { recursive: true });
    const errors: string[] = [];
    for (const name of syncNames) {
      const owner = `${this.owner}-${name}`;
      const outcome = await applyPath({ path: empty, cloud: testCloudName, config: { ...defaultConfig, owner, projectPrefix: `${this.owner}-`, stateDir: join(this.dir, 'cleanup', name) }, prune: true, allowMassDelete: true, log: () => {} });
      for (const e of outcome.report?.errors ?? []) errors.push(e.message);
      for (const p of await ownedProjects(cloud, owner)) {
        const network = cloud.client('network');
        for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: p.id })) await network.remove(`/security-groups/${g.id}`);
        await cloud.identity.call('PATCH', `/projects/${p.id}`, { json: { project: { enabled: false } } });
        await cloud.identity.remove(`/projects/${p.id}`);
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    if (errors.length) throw new Error(`cleanup failed: ${errors.join('; ')}`);
  }
}

/** Networks of a project by name, with the owner marker in their description. */
export async function networksIn(projectName: string): Promise<{ id: string; name: string; description: string; mtu: number }[]> {
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const [project] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: projectName });
  if (!project) return [];
  return cloud.client('network').list<{ id: string; name: string; description: string; mtu: number }>('/networks', 'networks', { project_id: project.id });
}

/** Subnets of a project by name (empty when the project does not exist). */
export async function subnetsIn(projectName: string): Promise<{ id: string; name: string; network_id: string }[]> {
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const [project] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: projectName });
  if (!project) return [];
  return cloud.client('network').list<{ id: string; name: string; network_id: string }>('/subnets', 'subnets', { project_id: project.id });
}
