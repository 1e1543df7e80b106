import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';
import { desired } from '../../agent/cloud/apply.ts';
import { driveCloud, type DriveOptions } from '../../agent/cloud/drive.ts';
import { planCloud } from '../../agent/cloud/plan.ts';
import { renderCloud } from '../../agent/cloud/render-cloud.ts';
import { generateSecrets } from '../../agent/cloud/secrets.ts';
import { loadKubeConfig } from '../../agent/kube/client.ts';
import type { OpenStackCloudSpec } from '../../agent/model/kinds.generated.ts';
import { charts } from '../testbed/charts/peer.ts';
import { kube, kubectl, kubectlPath } from '../testbed/kubernetes/peer.ts';
import type { BenchRow } from './table.ts';

/**
 * The plan of the whole test cloud once it is installed: our planCloud (fetch, render with
 * helm, server-side-apply dry run per object) beside the tools a user would chain by hand,
 * `helm template` of the same charts and `kubectl diff --server-side` of the output. Goal:
 * at most 2× the hand-made chain (ours also checks Jobs by hash and the inventory). The
 * per-chart times are printed in the row.
 */
const ns = 'cloud-bench';

const run = (cmd: string, args: string[], input?: string): Promise<void> => new Promise((resolve, reject) => {
  const child = execFile(cmd, args, { maxBuffer: 256 << 20 }, (err) => (err && err.code !== 1 ? reject(new Error(`${cmd} failed: ${err.message}`, { cause: err })) : resolve()));
  child.stdin?.end(input ?? '');
});

export async function benchCloud(): Promise<BenchRow[]> {
  const work = mkdtempSync(join(tmpdir(), 'ks-bench-cloud-'));
  const kubeConfig = loadKubeConfig({ kubeconfig: kube.kubeconfig });
  const opts: DriveOptions = { kubeConfig, cloud: 'cloud-bench', namespace: ns, baseDir: work, helm: charts.helm, pollMs: 300, stepDeadlineMs: 300_000 };
  const spec: OpenStackCloudSpec = { release: '2025.1', chart: { repository: charts.repository } };
  try {
    await kubectl(['delete', 'namespace', ns, '--wait=true', '--ignore-not-found']);
    const installed = await driveCloud(spec, opts);
    if (!installed.ready) throw new Error(`the bench cloud did not install: ${installed.failure?.reason ?? '?'}`);

    const t0 = performance.now();
    const plan = await planCloud(spec, opts);
    const ours = performance.now() - t0;
    if (plan.changes.length !== 0) throw new Error(`the installed cloud plans ${plan.changes.length} changes; the bench measures an empty plan`);

    // The hand-made chain: helm template (values written the same way), then kubectl diff --server-side.
    const p0 = performance.now();
    const rendered = await renderCloud({ spec, namespace: ns, secrets: generateSecrets((n) => Buffer.alloc(n, 1)), helm: charts.helm, workDir: mkdtempSync(join(work, 'r-')), baseDir: work, kubeVersion: kube.version });
    const file = join(work, 'all.yaml');
    writeFileSync(file, rendered.flatMap((c) => c.objects.filter((o) => o.phase.kind !== 'delete').map((o) => YAML.stringify(desired(o, { namespace: ns, cloud: 'cloud-bench' })))).join('---\n'));
    await run(kubectlPath, [`--kubeconfig=${kube.kubeconfig}`, 'diff', '--server-side', '--force-conflicts', '--field-manager=kupenstack', '-n', ns, '-f', file]);
    const peer = performance.now() - p0;

    const perChart = Object.keys(plan.millis.diff).map((c) => `${c} ${Math.round((plan.millis.render[c] ?? 0) + (plan.millis.diff[c] ?? 0))}`).join(', ');
    return [{ name: `cloud plan, ${rendered.length} charts (render + dry-run diff; ms per chart: ${perChart})`, ours: `${(ours / 1000).toFixed(2)} s`, peer: `${(peer / 1000).toFixed(2)} s helm template + kubectl diff --server-side`, goal: '≤ 2× the helm + kubectl chain', met: ours <= 2 * peer }];
  } finally {
    rmSync(work, { recursive: true, force: true });
    await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  }
}
