import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The peer modules that start a peer deferred while it builds (test/testbed/deferred.ts). */
const deferredPeers = new Set(['kubernetes', 'charts', 'signing'].map((p) => resolve(import.meta.dirname, `../testbed/${p}/peer.ts`)));

/** True when `file` imports a deferred peer's module, directly or through its relative imports. */
function needsDeferredPeer(file: string, seen = new Set<string>()): boolean {
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
 * Vitest's order, except that the files needing a peer that builds for long on
 * a fresh machine (the Kubernetes control plane and the test charts' helm,
 * ~25 min; cosign, ~25 min) run last: the builds go on while the OpenStack,
 * registry and Git tests run (test/testbed/up.sh defers those peers).
 */
export default class LateSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const late = new Map(sorted.map((f) => [f, needsDeferredPeer(f.moduleId)]));
    return [...sorted.filter((f) => !late.get(f)), ...sorted.filter((f) => late.get(f))];
  }
}
