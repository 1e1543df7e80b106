import { join } from 'node:path';
import { answers200, ensurePeers } from '../deferred.ts';
import { kube } from '../kubernetes/peer.ts';

/** The test charts as the test bed serves them (test/testbed/charts/up.sh). */
const home = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';

export const charts = {
  /** A classic Helm repository (index.yaml). */
  repository: 'http://127.0.0.1:8190/charts',
  /** The same packages in the anonymous OCI registry (plain HTTP on loopback). */
  oci: 'oci://127.0.0.1:5050/kupenstack-test/charts',
  /** Unpacked, one folder per chart (a chart.path source). */
  path: join(home, 'charts/build/src'),
  /** The test bed's pinned helm. */
  helm: join(kube.bin, 'helm'),
} as const;

// Needs the Kubernetes peer's helm: deferred with it on a fresh machine (test/testbed/deferred.ts).
await ensurePeers(['charts'], () => answers200(`${charts.repository}/index.yaml`));
