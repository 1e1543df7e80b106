import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The peer modules that start a peer deferred while it builds (test/testbed/deferred.ts). */
const deferredPeers = new Set(['kubernetes', 'charts', 'signing'].map((p) => resolve(import.meta.dirname, `../testbed/${p}/peer.ts`)));

/** True when `file` imports a deferred peer's module, directly or through its relative imports. */
export function needsDeferredPeer(file: string, seen = new Set<string>()): boolean {
  if (deferredPeers.has(file)) return true;
  if (seen.has(file)) return false;
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    if (needsDeferredPeer(resolve(dirname(file), m[1]!), seen)) return true;
  }
  return false;
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
