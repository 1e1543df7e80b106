import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { lateRank } from './deferred-peers.ts';

/**
 * Vitest's order, except that the files needing a peer that builds for long on
 * a fresh machine (the Kubernetes control plane and the test charts' helm,
 * ~25 min; cosign, ~25 min) run last: the builds go on while the OpenStack,
 * registry and Git tests run (test/testbed/up.sh defers those peers); the files that need
 * cosign after the others, since it builds after Kubernetes.
 */
export default class LateSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = new Map(sorted.map((f) => [f, lateRank(f.moduleId)]));
    return [0, 1, 2].flatMap((r) => sorted.filter((f) => rank.get(f) === r));
  }
}
