import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Makes sure every peer is up before the integration tests (reusing running
 * ones). A peer that cannot start fails the whole run with its log tail,
 * which up.sh prints on stderr.
 */
export default function setup(): void {
  const started = Date.now();
  const result = spawnSync('bash', [join(here, 'up.sh')], {
    // The token server of the Bearer registry is TypeScript: run it with this node.
    // Peers still building (Kubernetes, ~25 min cold) are deferred: their tests run last and start them (kubernetes/peer.ts).
    env: { ...process.env, KUPENSTACK_NODE: process.execPath, TESTBED_DEFER_UNBUILT: '1' },
    stdio: ['ignore', 'inherit', 'pipe'],
    encoding: 'utf8',
    // A fresh machine installs OpenStack from Debian's packages first.
    timeout: 50 * 60_000,
  });
  process.stderr.write(result.stderr ?? '');
  if (result.status !== 0) {
    const tail = (result.stderr ?? '').split('\n').slice(-60).join('\n');
    throw new Error(`the test bed could not start (exit ${result.status ?? result.signal ?? 'unknown'}); its output ends with:\n${tail}`);
  }
  process.stderr.write(`[testbed] peers ready after ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  if (process.env.KS_PREBUILD_IMAGES === '1') prebuildImages();
}

/**
 * `npm test` (KS_PREBUILD_IMAGES=1): the end-to-end files' images build in the background at the
 * lowest priority while the integration tests run (prebuild-images.sh), not after them. Detached
 * with the TMPDIR the run started with: the run's own TMPDIR is deleted when the run ends.
 */
function prebuildImages(): void {
  const home = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';
  mkdirSync(home, { recursive: true });
  const log = openSync(join(home, 'prebuild-images.log'), 'w');
  const tmp = process.env.KS_SECRET_RUN_TMP ? process.env.KS_SECRET_ORIGINAL_TMPDIR : process.env.TMPDIR;
  const env = { ...process.env, TMPDIR: tmp || '/tmp' };
  const child = spawn('nice', ['-n', '19', 'ionice', '-c', '3', 'bash', join(here, 'prebuild-images.sh')], { detached: true, stdio: ['ignore', log, log], env });
  child.unref();
  process.stderr.write(`[testbed] building the end-to-end images in the background (pid ${child.pid}, log ${join(home, 'prebuild-images.log')})\n`);
}
