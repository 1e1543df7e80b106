import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adapters } from '../../agent/kinds/registry.ts';
import { planBetweenRevisions } from '../../agent/plan/between-revisions.ts';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { checkGitRevision } from '../../agent/validate/check-git.ts';
import type { BenchRow } from './table.ts';

/**
 * Planning 10 000 declared resources, CPU time only (no API latency): the
 * plan between two Git revisions, as a pull request's CI runs it. The head
 * changes about a tenth of the objects: MTUs (updates), CIDRs (replacements,
 * with the VMs' references following), flavors (resizes), new networks and a
 * removed tenant (deletions).
 */
export function writeTenants(dir: string, total: number, head: boolean): number {
  let count = 0;
  for (let t = 0; count < total; t++) {
    const ns = `tenant-${t}`;
    const docs: string[] = [];
    const h = (kind: string, name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n`;
    docs.push(`${h('Flavor', 'small')}  vcpus: 1\n  ram: 512\n  disk: 1\n`, `${h('Flavor', 'large')}  vcpus: 2\n  ram: 1024\n  disk: 1\n`);
    docs.push(`${h('Image', 'cirros')}  diskFormat: qcow2\n  source:\n    url: {url: "https://images.example.com/cirros-0.6.qcow2"}\n`);
    docs.push(`${h('SecurityGroup', 'ssh')}  rules:\n    - {direction: ingress, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: 10.0.0.0/8}\n`);
    count += 4;
    for (let n = 0; n < 24 && count < total; n++) {
      const touched = head && n % 10 === 3;
      docs.push(`${h('Network', `net-${n}`)}  mtu: ${touched ? 1400 : 1450}\n`);
      const third = head && n % 10 === 5 ? 100 : 0;
      docs.push(`${h('Subnet', `sub-${n}`)}  networkRef: {name: net-${n}}\n  cidr: 10.${n}.${third}.0/24\n  gatewayIP: 10.${n}.${third}.1\n`);
      docs.push(`${h('Port', `port-${n}`)}  networkRef: {name: net-${n}}\n  fixedIPs: [{subnetRef: {name: sub-${n}}}]\n`);
      docs.push(`${h('VirtualMachine', `vm-${n}`)}  flavorRef: {name: ${head && n % 10 === 7 ? 'large' : 'small'}}\n  imageRef: {name: cirros}\n  networks:\n    - portRef: {name: port-${n}}\n  securityGroupRefs: [{name: ssh}]\n`);
      count += 4;
    }
    if (head && t % 40 === 1) docs.push(`${h('Network', 'added')}  mtu: 1450\n`);
    if (head && t === 2) continue; // a tenant removed
    mkdirSync(join(dir, ns), { recursive: true });
    writeFileSync(join(dir, ns, 'all.yaml'), docs.join('---\n'));
  }
  return count;
}

const cpuSeconds = (since: NodeJS.CpuUsage): number => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1e6;
};

export async function benchPlan(): Promise<BenchRow[]> {
  const repo = mkdtempSync(join(tmpdir(), 'ks-bench-plan-'));
  const git = (...args: string[]): void => {
    execFileSync('git', ['-c', 'user.email=bench@kupenstack.invalid', '-c', 'user.name=bench', ...args], { cwd: repo, stdio: 'ignore' });
  };
  try {
    git('init', '-q', '-b', 'main');
    const declared = writeTenants(repo, 10_000, false);
    git('add', '-A');
    git('commit', '-qm', 'base');
    rmSync(join(repo, 'tenant-2'), { recursive: true });
    writeTenants(repo, 10_000, true);
    git('add', '-A');
    git('commit', '-qm', 'head');
    const registry = loadSchemaRegistry();

    let whole = Infinity;
    let planner = Infinity;
    let summary = '';
    for (let i = 0; i < 3; i++) {
      const t0 = process.cpuUsage();
      const [base, head] = await Promise.all([checkGitRevision(repo, 'HEAD~1', '.', registry), checkGitRevision(repo, 'HEAD', '.', registry)]);
      if (base.diagnostics.length + head.diagnostics.length > 0) throw new Error(`the benchmark revisions should be valid: ${base.diagnostics[0]?.message ?? head.diagnostics[0]?.message}`);
      const t1 = process.cpuUsage();
      const { plan, errors } = await planBetweenRevisions(base.validated, head.validated, { adapters, prune: true, massDeleteThreshold: 0.5, allowMassDelete: false, baseLabel: base.revision, headLabel: head.revision });
      planner = Math.min(planner, cpuSeconds(t1));
      whole = Math.min(whole, cpuSeconds(t0));
      if (errors.length > 0) throw new Error(`planning failed: ${errors[0]}`);
      const s = plan.summary;
      summary = `${s.create} create, ${s.update} update, ${s.replace} replace, ${s.delete} delete`;
    }
    return [
      { name: `plan ${declared} declared resources between two Git revisions (${summary}): planner only, CPU, best of 3`, ours: `${planner.toFixed(2)} s`, peer: 'none (CPU only)', goal: '≤ 2 s', met: planner <= 2 },
      { name: `the same, whole plan --base (read both commits from Git + load + validate + plan), CPU`, ours: `${whole.toFixed(2)} s`, peer: 'none (CPU only)', goal: '≤ 2 s', met: whole <= 2 },
    ];
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}
