import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { diffRenders, type CloudObjectChange } from '../cloud/diff.ts';
import { DEFAULT_CLOUD_NAMESPACE, formatCloudChange, planCloud, upgradePlan } from '../cloud/drive.ts';
import { helmBinary } from '../cloud/helm.ts';
import { renderCloud } from '../cloud/render-cloud.ts';
import { generateSecrets } from '../cloud/secrets.ts';
import { loadKubeConfig } from '../kube/client.ts';
import type { Manifest } from '../model/manifest.ts';
import type { OpenStackCloudSpec } from '../model/kinds.generated.ts';
import { baseDirOf, namespaceOf, type CloudStepOptions } from '../standalone/revision-cloud.ts';

/** The --kubeconfig and --cloud-namespace flags of apply, plan and agent (the cloud itself: ../standalone/revision-cloud.ts). */
export function withCloudStepOptions(command: Command): Command {
  return command
    .option('--kubeconfig <file>', 'drive the OpenStackCloud the revision declares in this Kubernetes cluster (OpenStack-Helm charts) before its OpenStack resources')
    .option('--cloud-namespace <ns>', 'with --kubeconfig: the namespace of the cloud\'s charts (default: the spec\'s namespace, else openstack)');
}

export interface CloudPlanSection {
  cloud: string;
  namespace?: string;
  changes: CloudObjectChange[];
  steps: string[];
}

export async function planCloudOf(m: Manifest, path: string, opts: CloudStepOptions): Promise<CloudPlanSection> {
  const kubeConfig = loadKubeConfig({ kubeconfig: opts.kubeconfig });
  const namespace = namespaceOf(m, opts);
  const plan = await planCloud(m.spec as unknown as OpenStackCloudSpec, { kubeConfig, cloud: m.metadata.name, namespace, baseDir: await baseDirOf(path) });
  return { cloud: m.metadata.name, namespace, changes: plan.changes, steps: plan.steps };
}

/** `plan --base` without a cluster: the two revisions' renders compared (same placeholder credentials on both sides). */
export async function planCloudBetween(base: Manifest | undefined, head: Manifest, baseDir: string): Promise<CloudPlanSection> {
  const secrets = generateSecrets((n) => Buffer.alloc(n));
  const work = await mkdtemp(join(tmpdir(), 'kupenstack-cloud-plan-'));
  try {
    const render = (spec: OpenStackCloudSpec, sub: string) => renderCloud({ spec, namespace: DEFAULT_CLOUD_NAMESPACE, secrets, helm: helmBinary(), workDir: join(work, sub), baseDir });
    const [b, h] = await Promise.all([base ? render(base.spec as unknown as OpenStackCloudSpec, 'base') : Promise.resolve([]), render(head.spec as unknown as OpenStackCloudSpec, 'head')]);
    const [from, to] = [(base?.spec as unknown as OpenStackCloudSpec | undefined)?.release, (head.spec as unknown as OpenStackCloudSpec).release];
    return { cloud: head.metadata.name, changes: diffRenders(b, h), steps: from !== undefined && from !== to ? upgradePlan(head.spec as unknown as OpenStackCloudSpec, h, { release: from }) : [] };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

export function printCloudSection(s: CloudPlanSection, write: (text: string) => void): void {
  write(`\nOpenStackCloud ${s.cloud}${s.namespace ? ` (Kubernetes namespace ${s.namespace})` : ''}: ${s.changes.length === 0 ? 'no changes' : `${s.changes.length} object changes`}\n`);
  const byChart = new Map<string, CloudObjectChange[]>();
  for (const c of s.changes) byChart.set(c.chart || '(pruned)', [...(byChart.get(c.chart || '(pruned)') ?? []), c]);
  for (const [chart, changes] of byChart) {
    write(`  chart ${chart}:\n`);
    for (const c of changes) for (const line of formatCloudChange(c)) write(`    ${line}\n`);
  }
  if (s.changes.length > 0 && s.steps.length > 0) {
    write('  steps, in order:\n');
    for (const step of s.steps) write(`    ${step}\n`);
  }
}
