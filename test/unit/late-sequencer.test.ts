import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { integrationLanes, lateRank } from '../support/deferred-peers.ts';

const root = resolve(import.meta.dirname, '../..');

/**
 * The order a fresh machine's builds need (test/support/late-sequencer.ts, test/testbed/up.sh): the files on
 * no slow peer first, then those on the Kubernetes build, then those on cosign, which builds after Kubernetes.
 */
describe('lateRank', () => {
  const { kubernetes, others } = integrationLanes(root, []);
  const rank = (f: string): number => lateRank(resolve(root, f));

  it('ranks the files that need cosign last (the image-signature and image-attestation files, the Sync of signed OCI artifacts, image promote), through their imports', () => {
    expect(kubernetes.filter((f) => rank(f) === 2).sort()).toEqual([
      'test/integration/controller/sync-oci.test.ts',
      'test/integration/kinds/image-attestations.test.ts',
      'test/integration/kinds/image-signatures-keyless.test.ts',
      'test/integration/kinds/image-signatures.test.ts',
      'test/integration/oci/promote.test.ts',
    ]);
  });

  it('ranks every other file of the Kubernetes lane 1 and every file of the other lane 0', () => {
    expect(kubernetes.filter((f) => rank(f) !== 2).map(rank)).toEqual(kubernetes.filter((f) => rank(f) !== 2).map(() => 1));
    expect(kubernetes.length).toBeGreaterThan(20);
    expect(others.map(rank)).toEqual(others.map(() => 0));
  });
});
