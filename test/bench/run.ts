// `npm run bench`: every benchmark once, printed as one table beside its peer or goal.
// BENCH_ONLY=validate,plan,apply,oci,git,push,controller,pod,fuzz,registry,scale,tofu,loadbalancer,cloud,export,orc runs a subset.
import { renderTable, type BenchRow } from './table.ts';
import { benchApply } from './apply.ts';
import { benchPlan } from './plan.ts';
import { benchValidate } from './validate.ts';
import { benchOciImport } from './oci-import.ts';
import { benchPushLatency } from './push-latency.ts';
import { benchOci } from './oci.ts';
import { repeatabilityRow } from './repeatability.ts';
import { ratiosOfThisRun } from './rounds.ts';
import { benchController } from './controller.ts';
import { benchControllerPod } from './controller-pod.ts';
import { benchFuzz } from './fuzz.ts';
import { benchRegistryHooks } from './registry-hooks.ts';
import { benchScale } from './scale.ts';
import { benchOpenTofu } from './opentofu.ts';
import { benchLoadBalancers } from './loadbalancer.ts';
import { benchCloud } from './cloud.ts';
import { benchExport } from './export.ts';
import { benchOrc } from './orc.ts';
import { benchGitSource } from '../support/git-source-bench.ts';

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { agentFlags } from '../support/agent-flags.ts';

// The rows measured in this process (the OCI pipeline, validate, plan) measure the library as `kupenstack` runs it:
// with its Node flags, which change the garbage collector's pace under a stream of 64 KiB chunks. Started without
// them, the bench starts itself again with them.
const shipped = agentFlags();
if (!shipped.every((f) => process.execArgv.includes(f))) {
  const again = spawnSync(process.execPath, [...process.execArgv, ...shipped, fileURLToPath(import.meta.url)], { stdio: 'inherit' });
  process.exit(again.status ?? 1);
}

// The benchmarks need the test bed's peers (started, or reused).
if (spawnSync('bash', ['test/testbed/up.sh'], { stdio: ['ignore', 'ignore', 'inherit'] }).status !== 0) throw new Error('the test bed did not start');
const only = process.env.BENCH_ONLY?.split(',');
const benches = {
  validate: benchValidate,
  plan: benchPlan,
  apply: benchApply,
  // The registry side beside oras and curl, then the import into Glance beside the curl pipe; then each ratio beside an earlier run's (repeatability.ts).
  oci: async (): Promise<BenchRow[]> => {
    const rows = [...(await benchOci()), ...(await benchOciImport())];
    return [...rows, repeatabilityRow(ratiosOfThisRun)];
  },
  git: (): Promise<BenchRow[]> => benchGitSource(),
  push: benchPushLatency,
  // The in-cluster controller: kubectl apply → first OpenStack write; a no-op resync of many resources.
  controller: benchController,
  // Issue 28: the chart's controller pods on the real node with 1 000 resources, memory by the kubelet.
  pod: benchControllerPod,
  // Issue 16: the fuzz targets of test/unit/fuzz.test.ts with a much larger budget.
  fuzz: benchFuzz,
  // Registry notifications (tag move → Glance) beside polling; image export beside curl.
  registry: benchRegistryHooks,
  // 10 000 resources in 100 namespaces: cloud-wide observation (BENCH_SCALE_NAMESPACES, BENCH_SCALE_PER_NAMESPACE scale it down).
  scale: benchScale,
  // The same 300 resources beside OpenTofu and the OpenStack provider (built from the Go module proxy on first use).
  tofu: benchOpenTofu,
  // Issue 32: the first apply of 20 load balancers (BENCH_LB_COUNT) beside OpenTofu's openstack_lb_* resources, no-op, destroy.
  loadbalancer: benchLoadBalancers,
  // Issue 14: the plan of the whole installed test cloud beside helm template + kubectl diff --server-side.
  cloud: benchCloud,
  // Issue 30: kupenstack export of 1 000 then 10 000 objects in 100 projects beside the openstack CLI's listing (BENCH_EXPORT_SIZES).
  export: benchExport,
  // Issue 51: the in-cluster controller beside ORC (openstack-resource-controller) on the same objects (BENCH_ORC_OBJECTS).
  orc: benchOrc,
};
const rows: BenchRow[] = [];
for (const [name, bench] of Object.entries(benches)) if (!only || only.includes(name)) rows.push(...(await bench()));
console.log(renderTable(rows));
