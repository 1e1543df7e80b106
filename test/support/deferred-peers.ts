import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The peer modules that start a peer deferred while it builds (test/testbed/deferred.ts). */
const deferredPeers = new Set(['kubernetes', 'charts', 'signing'].map((p) => resolve(import.meta.dirname, `../testbed/${p}/peer.ts`)));

/** True when `file` imports a deferred peer's module (or one of `peers`), directly or through its relative imports. */
export function needsDeferredPeer(file: string, seen = new Set<string>(), peers: ReadonlySet<string> = deferredPeers): boolean {
  if (peers.has(file)) return true;
  if (seen.has(file)) return false;
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    if (needsDeferredPeer(resolve(dirname(file), m[1]!), seen, peers)) return true;
  }
  return false;
}

const signingPeer = new Set([resolve(import.meta.dirname, '../testbed/signing/peer.ts')]);

/**
 * Where a file goes in a lane's order (test/support/late-sequencer.ts): 0 on no deferred peer, 1 on the
 * Kubernetes build (the control plane, the charts' helm), 2 on cosign, which a fresh machine builds
 * after Kubernetes' binaries (test/testbed/up.sh).
 */
export function lateRank(file: string): 0 | 1 | 2 {
  if (needsDeferredPeer(file, new Set(), signingPeer)) return 2;
  return needsDeferredPeer(file) ? 1 : 0;
}

/**
 * The integration files split in two lanes that `npm test` runs side by side
 * (vitest.config.ts): the files that need a deferred peer (the Kubernetes
 * control plane, the charts' helm, cosign) and the others (OpenStack, the
 * registries, Git). Paths relative to the repository, as the config's
 * include lists take them.
 */
export function integrationLanes(root: string, exclude: readonly string[]): { kubernetes: string[]; others: string[] } {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : [];
    });
  const files = walk(join(root, 'test/integration'))
    .map((p) => relative(root, p))
    .filter((f) => !exclude.includes(f))
    .sort();
  const kubernetes = files.filter((f) => needsDeferredPeer(resolve(root, f)));
  return { kubernetes, others: files.filter((f) => !kubernetes.includes(f)) };
}
