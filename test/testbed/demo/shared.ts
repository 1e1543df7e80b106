// What both modes of `npm run demo` share: the test bed's paths, the Git
// repository seeded from repo-template on the local Git server, and the VM
// image published to the local registry.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const root = resolve(import.meta.dirname, '../../..');
export const tbHome = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';
export const home = process.env.KUPENSTACK_DEMO_HOME ?? join(tbHome, 'demo');
export const repoName = 'demo';
export const gitUser = 'kupenstack';
export const gitPassword = 'testbed-secret'; // the test bed's own throw-away credential
export const bold = (s: string): string => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
export const say = (s: string): void => void process.stdout.write(`${bold('demo')} ${s}\n`);

export function git(args: string[], cwd?: string): string {
  const auth = `Authorization: Basic ${Buffer.from(`${gitUser}:${gitPassword}`).toString('base64')}`;
  const r = spawnSync('git', ['-c', `http.extraHeader=${auth}`, '-c', 'user.name=KupenStack demo', '-c', 'user.email=demo@kupenstack.invalid', '-c', 'commit.gpgsign=false', ...args], { cwd, encoding: 'utf8', env: { ...process.env, HOME: join(home, 'git-home'), GIT_TERMINAL_PROMPT: '0' } });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * A small copy of repo-template: both tenants' networks, routers, security
 * groups, key pairs, flavors and images, and one VM (team-a's web-1) — enough
 * to see every kind at work and to converge in about a minute. The Image
 * manifests keep repo-template's `source.oci` (127.0.0.1:5050/vm/cirros:0.6).
 */
function seed(dir: string): void {
  cpSync(join(root, 'repo-template'), dir, { recursive: true });
  rmSync(join(dir, 'tenants/team-b/web.yaml'), { force: true });
  const vms = join(dir, 'tenants/team-a/virtual-machines.yaml');
  const docs = readFileSync(vms, 'utf8').split(/^---\n/m);
  writeFileSync(vms, docs.filter((d) => /name: web-1\n/.test(d)).join('---\n'));
}

/**
 * The VM image repo-template names, published to the local registry with
 * `kupenstack image push` (once): tag 0.6 (team-a follows it) and 0.6.2
 * (team-b follows the semver range >=0.6.0 <0.7.0).
 */
export function publishImage(): void {
  const cli = (args: string[]) => spawnSync(process.execPath, [join(root, 'agent/cli/main.ts'), 'image', ...args], { encoding: 'utf8' });
  const disk = join(home, 'cirros.qcow2');
  for (const ref of ['127.0.0.1:5050/vm/cirros:0.6', '127.0.0.1:5050/vm/cirros:0.6.2']) {
    if (cli(['inspect', ref, '--insecure', '-o', 'json']).status === 0) {
      say(`VM image ${ref} is in the registry`);
      continue;
    }
    if (!existsSync(disk)) execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, '64M']);
    const pushed = cli(['push', disk, ref, '--insecure', '--os-distro', 'cirros', '--os-version', '0.6', '--arch', 'x86_64', '--min-disk', '1', '--quiet']);
    if (pushed.status !== 0) throw new Error(`kupenstack image push ${ref} failed: ${pushed.stderr}`);
    say(`published a small qcow2 as ${ref} (kupenstack image push)`);
  }
}

/** The demo's repository on the local Git server, seeded from repo-template the first time: its clone URL. */
export function seedRepository(): string {
  const url = execFileSync('bash', [join(root, 'test/testbed/git/new-repo.sh'), repoName], { encoding: 'utf8' }).trim();
  const seeded = git(['ls-remote', url, 'refs/heads/main']) !== '';
  if (seeded) say(`reusing ${url} (delete ${tbHome}/git/repos/${repoName}.git to start over)`);
  else {
    const work = join(home, 'seed');
    rmSync(work, { recursive: true, force: true });
    seed(work);
    git(['init', '-q', '--initial-branch=main', work]);
    git(['add', '-A'], work);
    git(['commit', '-q', '-m', 'KupenStack demo: seeded from repo-template'], work);
    git(['push', '-q', url, 'HEAD:refs/heads/main'], work);
    say(`seeded ${url} from repo-template (2 tenants, 1 VM)`);
  }
  return url;
}

/**
 * The Git server's post-receive hook for the demo repository: every push is
 * posted to `hookUrl` as a Gitea push event, HMAC-SHA256 signed with `secret`;
 * `curlArgs` are shell words added to curl's (files only: never a credential itself).
 */
export function installPushHook(url: string, secret: string, hookUrl: string, who: string, curlArgs = ''): void {
  const hook = join(tbHome, 'git/repos', `${repoName}.git`, 'hooks/post-receive');
  writeFileSync(
    hook,
    `#!/bin/sh
# KupenStack demo: tell the ${who} about every push (what Gitea sends, HMAC-SHA256 signed).
while read old new ref; do
  body=$(printf '{"ref":"%s","before":"%s","after":"%s","repository":{"clone_url":"%s"}}' "$ref" "$old" "$new" '${url}')
  sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac '${secret}' -r | cut -d' ' -f1)
  curl -sf -m 5 -o /dev/null ${curlArgs} -H 'Content-Type: application/json' -H 'X-Gitea-Event: push' -H "X-Gitea-Delivery: $(cat /proc/sys/kernel/random/uuid)" -H "X-Gitea-Signature: $sig" --data-binary "$body" '${hookUrl}' && echo "KupenStack ${who} notified" || echo "KupenStack ${who} not notified at ${hookUrl} (unreachable or refused); it will notice within a minute"
done
`,
  );
  chmodSync(hook, 0o755);
}
