import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeHits, harvestedCredentials, scan, testbedCredentials } from './secret-scan.ts';

/**
 * Global setup of every test project (issue 16 item 4). Before the tests:
 * a TMPDIR of the run's own (so what the tests and the agents they start
 * leave there is this run's output, not another session's) and the tee
 * directory test/support/secret-tee.ts writes to. After the last test: the
 * tee, the run's TMPDIR and the test bed's logs and state are scanned for
 * every credential the test bed uses; one hit fails the run.
 * KS_SECRET_SCAN=0 turns it off (a run that must not be slowed, e.g. a single test while debugging).
 */
const testbedHome = process.env.TB_HOME ?? '/var/lib/kupenstack-testbed';
/** The test bed's output: its peers' logs and the demo's state (its inputs, like htpasswd and kubeconfigs, are skipped by the scanner). */
const testbedOutputs = ['openstack/log', 'registry/log', 'git/log', 'kubernetes/log', 'charts/log', 'oci-tools/log', 'demo/state'].map((p) => join(testbedHome, p));

export default function setup(): (() => void) | undefined {
  if (process.env.KS_SECRET_SCAN === '0') return undefined;
  // Two projects share one run: the first setup makes the directories, the second reuses them.
  if (process.env.KS_SECRET_TEE_DIR) return undefined;
  const runTmp = mkdtempSync(join(tmpdir(), 'ks-run-'));
  const tee = join(runTmp, 'tee');
  mkdirSync(tee);
  process.env.KS_SECRET_RUN_TMP = runTmp;
  process.env.KS_SECRET_TEE_DIR = tee;
  const originalTmp = process.env.TMPDIR;
  // test/testbed/up.sh gives the peers it starts this one back: they outlive the run and its TMPDIR.
  process.env.KS_SECRET_ORIGINAL_TMPDIR = originalTmp ?? '';
  process.env.TMPDIR = runTmp;
  return () => {
    if (originalTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = originalTmp;
    const creds = [...testbedCredentials(), ...harvestedCredentials(tee)];
    const result = scan([runTmp, ...testbedOutputs], creds);
    process.stderr.write(`[secret-scan] ${result.files} files (${(result.bytes / 1024 / 1024).toFixed(1)} MiB) scanned for ${creds.length} credentials and 2 token shapes: ${result.hits.length} hits\n`);
    // A scan over nothing would pass without proving anything.
    if (result.files === 0) throw new Error('secret scan: nothing was collected to scan; the tee (test/support/secret-tee.ts) is not running');
    if (result.hits.length > 0) throw new Error(`secret scan: ${result.hits.length} credentials found in what the run wrote (kept in ${runTmp}):\n${describeHits(result.hits)}`);
    rmSync(runTmp, { recursive: true, force: true });
  };
}
