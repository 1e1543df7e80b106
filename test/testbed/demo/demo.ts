// `npm run demo -- --standalone`, after the test bed is up: seed a Git repository on the local
// Git server from repo-template, run `kupenstack agent` against it in the
// foreground, show the resources appear, and say how to push a change.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { bold, gitPassword, gitUser, home, installPushHook, publishImage, repoName, root, say, seedRepository } from './shared.ts';

const listen = process.env.KUPENSTACK_DEMO_LISTEN ?? '127.0.0.1:9090';
const owner = 'demo';

async function main(): Promise<void> {
  mkdirSync(join(home, 'git-home'), { recursive: true });
  publishImage();
  const url = seedRepository();

  // The webhook: a post-receive hook on the Git server posts a signed Gitea-style push event to the agent.
  const secretFile = join(home, 'webhook-secret');
  if (!existsSync(secretFile)) writeFileSync(secretFile, randomBytes(24).toString('hex'), { mode: 0o600 });
  const secret = readFileSync(secretFile, 'utf8');
  installPushHook(url, secret, `http://${listen}/hooks/demo`, 'agent');

  const configFile = join(home, 'kupenstack.yaml');
  writeFileSync(
    configFile,
    stringify({
      cloud: 'kupenstack-local',
      owner,
      projectPrefix: `${owner}-`,
      stateDir: join(home, 'state'),
      syncs: [{ name: 'demo', source: { git: { url, ref: { branch: 'main' }, username: gitUser, passwordEnv: 'KUPENSTACK_DEMO_GIT_PASSWORD' } }, interval: '1m', retryInterval: '10s', timeout: '5m', webhook: { secretFile } }],
    }),
  );
  say(`starting: kupenstack agent --config ${configFile} --listen ${listen}`);
  const agent = spawn(process.execPath, [join(root, 'agent/cli/main.ts'), 'agent', '--config', configFile, '--listen', listen, '--log-format', 'pretty'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, KUPENSTACK_DEMO_GIT_PASSWORD: gitPassword },
  });
  const stop = (): void => void agent.kill('SIGTERM');
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const exited = new Promise<number | null>((ok) => agent.on('exit', (code) => ok(code)));

  const started = Date.now();
  for (;;) {
    if (agent.exitCode !== null) break;
    const ready = await fetch(`http://${listen}/readyz`).then((r) => r.status === 200, () => false);
    if (ready) {
      say(`converged in ${((Date.now() - started) / 1000).toFixed(0)} s.`);
      const projects = ['team-a', 'team-b'].map((ns) => `${owner}-${ns}`);
      for (const p of projects) {
        const run = spawnSync('openstack', ['--os-cloud', 'kupenstack-local', 'network', 'list', '--project', p, '-c', 'Name', '-f', 'value'], { encoding: 'utf8' });
        say(`networks in project ${p}: ${run.stdout.trim().split('\n').join(', ')}`);
      }
      const vms = spawnSync('openstack', ['--os-cloud', 'kupenstack-local', 'server', 'list', '--all-projects', '--project', `${owner}-team-a`, '-c', 'Name', '-c', 'Status', '-f', 'value'], { encoding: 'utf8' });
      say(`servers in ${owner}-team-a: ${vms.stdout.trim().split('\n').join(', ')}`);
      process.stdout.write(`
${bold('Now change the cloud with a git push:')}

  # git asks for the test bed's Git password: GIT_PASSWORD in test/testbed/git/common.sh (never put it in the URL: it would land in .git/config and logs)
  git clone http://${gitUser}@127.0.0.1:8180/git/${repoName}.git ~/kupenstack-demo && cd ~/kupenstack-demo
  cat > tenants/team-b/extra-net.yaml <<'EOF'
apiVersion: kupenstack.io/v1alpha1
kind: Network
metadata:
  name: extra-net
  namespace: team-b
spec:
  description: added by a git push
EOF
  git add . && git commit -m "team-b: extra-net" && git push

  The push notifies the agent (webhook); within seconds:
  openstack --os-cloud kupenstack-local network list --project ${owner}-team-b

Watch it:   curl -s http://${listen}/readyz      (ready, or why not)
            curl -s http://${listen}/status      (revisions, conditions, last 10 runs)
            curl -s http://${listen}/metrics     (Prometheus)
Try a broken file (e.g. a typo in a field name): nothing from that revision is applied and
/status names the file and line; push a fix and it converges again.

The agent keeps running here (Ctrl-C stops it; SIGTERM finishes the current step first).
`);
      break;
    }
    await sleep(1000);
  }
  process.exitCode = (await exited) ?? 0;
}

await main();
