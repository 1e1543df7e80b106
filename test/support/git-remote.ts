import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { peers } from './peers.ts';

const testbed = join(dirname(fileURLToPath(import.meta.url)), '../testbed');

/**
 * A fresh repository on the test bed's Git server and a working copy driven
 * by the real `git` CLI: what a user does when they push manifests.
 * Credentials go in an extra header per command, never into a config file.
 */
export class TestRepo {
  readonly name: string;
  /** Clone URL without credentials (what a Sync would name). */
  readonly url: string;
  readonly work: string;
  readonly #env: NodeJS.ProcessEnv;

  private constructor(name: string, url: string, work: string, home: string) {
    this.name = name;
    this.url = url;
    this.work = work;
    this.#env = { ...process.env, HOME: home, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', GNUPGHOME: join(home, '.gnupg') };
  }

  static async create(prefix: string): Promise<TestRepo> {
    const name = `${prefix}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    const url = execFileSync('bash', [join(testbed, 'git/new-repo.sh'), name], { encoding: 'utf8' }).trim();
    const base = await mkdtemp(join(tmpdir(), 'ks-src-'));
    const work = join(base, 'work');
    const home = join(base, 'home');
    await mkdir(work);
    await mkdir(home);
    const repo = new TestRepo(name, url, work, home);
    repo.git('init', '-q', '-b', 'main');
    return repo;
  }

  /** The throwaway HOME (gpg keys for signed commits live under it). */
  get home(): string {
    return this.#env.HOME ?? '';
  }

  get env(): NodeJS.ProcessEnv {
    return this.#env;
  }

  git(...args: string[]): string {
    const auth = `Authorization: Basic ${Buffer.from(`${peers.git.user}:${peers.git.password}`).toString('base64')}`;
    return execFileSync('git', ['-c', 'user.name=Test Author', '-c', 'user.email=author@example.invalid', '-c', 'credential.helper=', '-c', `http.extraHeader=${auth}`, '-c', 'commit.gpgsign=false', ...args], { cwd: this.work, encoding: 'utf8', env: this.#env }).trim();
  }

  /** Writes files (path → content; null deletes), commits them and returns the new commit id. */
  async commit(files: Record<string, string | null>, message = 'change', extra: string[] = []): Promise<string> {
    for (const [path, content] of Object.entries(files)) {
      const full = join(this.work, path);
      if (content === null) await rm(full, { force: true });
      else {
        await mkdir(dirname(full), { recursive: true });
        await writeFile(full, content);
      }
    }
    this.git('add', '-A');
    this.git('commit', '-q', '--allow-empty', '-m', message, ...extra);
    return this.head();
  }

  /** Creates a symbolic link in the working copy (committed by the next commit). */
  async symlink(path: string, target: string): Promise<void> {
    const full = join(this.work, path);
    await mkdir(dirname(full), { recursive: true });
    await symlink(target, full);
  }

  head(): string {
    return this.git('rev-parse', 'HEAD');
  }

  push(...refspecs: string[]): void {
    this.git('push', '-q', this.url, ...(refspecs.length ? refspecs : ['main']));
  }

  /** The commits the server has under a ref, via ls-remote (what the server says, not what we believe). */
  remoteRef(ref: string): string | undefined {
    const line = this.git('ls-remote', this.url, ref).split('\n').find((l) => l.endsWith(`\t${ref}`));
    return line?.split('\t')[0];
  }

  /** Removes the working copy and this test's repository from the server (only the one it created). */
  async dispose(): Promise<void> {
    await rm(dirname(this.work), { recursive: true, force: true });
    const home = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';
    await rm(join(home, 'git', 'repos', `${this.name}.git`), { recursive: true, force: true });
  }
}
