import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { diffRenders, type CloudObjectChange } from '../cloud/diff.ts';
import { DEFAULT_CLOUD_NAMESPACE, driveCloud, formatCloudChange, planCloud, upgradePlan, type DriveResult } from '../cloud/drive.ts';
import { helmBinary } from '../cloud/helm.ts';
import { renderCloud } from '../cloud/render-cloud.ts';
import { generateSecrets } from '../cloud/secrets.ts';
import { loadKubeConfig } from '../kube/client.ts';
import type { Manifest } from '../model/manifest.ts';
import type { OpenStackCloudSpec } from '../model/kinds.generated.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { checkPath } from '../validate/check-path.ts';

/**
 * The OpenStackCloud of a revision, for the standalone commands: with --kubeconfig the
 * cloud is driven (apply) or diffed (plan) in that cluster before the OpenStack resources,
 * which wait for it to be Ready; without, it is only validated and the user is told.
 */
export interface CloudStepOptions {
  kubeconfig?: string;
  /** Wins over the spec's namespace; default `openstack`. */
  cloudNamespace?: string;
}

const namespaceOf = (m: Manifest, opts: CloudStepOptions): string => opts.cloudNamespace ?? (m.spec as unknown as OpenStackCloudSpec).namespace ?? DEFAULT_CLOUD_NAMESPACE;

export function withCloudStepOptions(command: Command): Command {
  return command
    .option('--kubeconfig <file>', 'drive the OpenStackCloud the revision declares in this Kubernetes cluster (OpenStack-Helm charts) before its OpenStack resources')
    .option('--cloud-namespace <ns>', 'with --kubeconfig: the namespace of the cloud\'s charts (default: the spec\'s namespace, else openstack)');
}

export const cloudManifest = (manifests: readonly Manifest[]): Manifest | undefined => manifests.find((m) => m.kind === 'OpenStackCloud');

/** A relative chart.path starts at the repository root: the folder given (or a manifest file's folder). */
async function baseDirOf(path: string): Promise<string> {
  const s = await stat(path);
  return resolve(s.isDirectory() ? path : dirname(path));
}

export async function applyCloud(m: Manifest, path: string, opts: CloudStepOptions, log: (line: string) => void, signal?: AbortSignal): Promise<DriveResult> {
  const kubeConfig = loadKubeConfig({ kubeconfig: opts.kubeconfig });
  const namespace = namespaceOf(m, opts);
  log(`cloud ${m.metadata.name}: release ${(m.spec as unknown as OpenStackCloudSpec).release} in namespace ${namespace}`);
  const pauseAt = m.metadata.annotations?.['kupenstack.io/pause-upgrade-at'];
  return driveCloud(m.spec as unknown as OpenStackCloudSpec, { kubeConfig, cloud: m.metadata.name, namespace, ...(pauseAt ? { pauseAt } : {}), baseDir: await baseDirOf(path), log, signal });
}

/** The OpenStackCloud of a revision and, with a kubeconfig, the result of driving it. */
export interface RevisionCloud {
  manifest: Manifest;
  /** Absent without a kubeconfig: the cloud is only validated. */
  driven?: DriveResult;
  /** The revision's other manifests: they wait while the cloud is not Ready. */
  waiting: number;
}

/**
 * The one path `apply --kubeconfig` and `agent --kubeconfig` drive a revision's cloud by:
 * validate PATH, find its OpenStackCloud, drive it. Undefined when the revision declares
 * none, or does not validate (the resources' apply that follows reports why).
 */
export async function driveRevisionCloud(path: string, registry: SchemaRegistry, opts: CloudStepOptions, log: (line: string) => void, signal?: AbortSignal): Promise<RevisionCloud | undefined> {
  const check = await checkPath(path, registry);
  if (check.diagnostics.length > 0) return undefined;
  const manifest = cloudManifest(check.validated.manifests);
  if (!manifest) return undefined;
  const waiting = check.validated.manifests.filter((m) => m !== manifest).length;
  if (!opts.kubeconfig) return { manifest, waiting };
  return { manifest, waiting, driven: await applyCloud(manifest, path, opts, log, signal) };
}

/** Why the resources of a revision wait: the cloud's Ready condition (paused, outside the window, a failed step). */
export const cloudNotReady = (c: RevisionCloud): string => `OpenStackCloud ${c.manifest.metadata.name} is not Ready: ${c.driven?.status.conditions?.find((x) => x.type === 'Ready')?.message ?? 'see its status'}; ${c.waiting} resources wait for it, nothing else was applied`;

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
