import { defineConfig } from 'vitest/config';
import LateSequencer from './test/support/late-sequencer.ts';

// The end-to-end files: pods on the test bed's real node (kubelet + containerd), each minutes long.
// `npm test` runs them after the integration project as `npm run test:e2e`, so each part's time shows.
const e2e = [
  'test/integration/kubernetes/real-node.test.ts',
  'test/integration/kubernetes/agent-pod.test.ts',
  'test/integration/kubernetes/real-pods.test.ts',
  'test/integration/controller/real-cloud.test.ts',
];

// Four projects: pure-logic unit tests; integration tests against the real peers of
// the test bed (started, or reused, by the global setup); the end-to-end files on the
// real node — all three run by `npm test` — and the long fault and crash soaks of
// issue 16 (`npm run test:soak`).
export default defineConfig({
  test: {
    reporters: ['default'],
    // Kubernetes tests last: the control plane may still be building (test/support/late-sequencer.ts).
    sequence: { sequencer: LateSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          testTimeout: 30_000,
          // Issue 16 item 4: everything the run writes is teed and scanned for credentials at its end.
          globalSetup: ['test/support/secret-scan-setup.ts'],
          setupFiles: ['test/support/secret-tee.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: e2e,
          globalSetup: ['test/support/secret-scan-setup.ts', 'test/testbed/global-setup.ts'],
          setupFiles: ['test/support/secret-tee.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          // The peers are shared state: integration files run one at a time.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e',
          include: e2e,
          globalSetup: ['test/support/secret-scan-setup.ts', 'test/testbed/global-setup.ts'],
          setupFiles: ['test/support/secret-tee.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'soak',
          include: ['test/soak/**/*.test.ts'],
          globalSetup: ['test/support/secret-scan-setup.ts', 'test/testbed/global-setup.ts'],
          setupFiles: ['test/support/secret-tee.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
