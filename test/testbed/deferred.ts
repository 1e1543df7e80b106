import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Peers whose binaries build for a long time on a fresh machine (Kubernetes,
 * cosign) are not waited for by the suite's global setup (up.sh with
 * TESTBED_DEFER_UNBUILT=1): the files that need one import its peer module,
 * which calls this at load time, and the sequencer runs those files last
 * (test/support/late-sequencer.ts), so the builds overlap the other tests.
 * Starts the peers (waiting for their builds) unless `ready` says they are up;
 * a peer that cannot start fails the importing file loudly with its log tail.
 */
export async function ensurePeers(peers: string[], ready: () => Promise<boolean>): Promise<void> {
  if (await ready()) return;
  process.stderr.write(`[testbed] starting ${peers.join(', ')} (waiting for a build if one runs)\n`);
  const r = spawnSync('bash', [join(here, 'up.sh')], { env: { ...process.env, TESTBED_PEERS: peers.join(' '), KUPENSTACK_NODE: process.execPath }, stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8', timeout: 75 * 60_000 });
  process.stderr.write(r.stderr ?? '');
  if (r.status !== 0) throw new Error(`the test bed's ${peers.join(', ')} could not start (exit ${r.status ?? r.signal ?? 'unknown'}):\n${(r.stderr ?? '').split('\n').slice(-40).join('\n')}`);
}

/** True when `url` answers 200 within 3 s (plain HTTP on loopback). */
export async function answers200(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}
