import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const deferredPeer = resolve(import.meta.dirname, '../testbed/kubernetes/peer.ts');

/** True when `file` imports the Kubernetes peer module, directly or through its relative imports. */
function needsKubernetes(file: string, seen = new Set<string>()): boolean {
  if (file === deferredPeer) return true;
  if (seen.has(file)) return false;
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return false;
  }
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    if (needsKubernetes(resolve(dirname(file), m[1]!), seen)) return true;
  }
  return false;
}

/**
 * Vitest's order, except that the files needing the Kubernetes control plane
 * run last: on a fresh machine its binaries build (~25 min) while the
 * OpenStack, registry and Git tests run (test/testbed/up.sh defers it).
 */
export default class LateSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const late = new Map(sorted.map((f) => [f, needsKubernetes(f.moduleId)]));
    return [...sorted.filter((f) => !late.get(f)), ...sorted.filter((f) => late.get(f))];
  }
}
