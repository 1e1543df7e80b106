import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OpenStackCloudSpec, OpenStackCloudStatus } from '../model/kinds.generated.ts';
import { diffLive, diffRenders, type CloudObjectChange } from './diff.ts';
import { DEFAULT_CLOUD_NAMESPACE, renderWith, type DriveOptions } from './drive.ts';
import { helmBinary } from './helm.ts';
import { installSteps, summariseStep } from './phases.ts';
import { renderCloud, type RenderedChart } from './render-cloud.ts';
import { generateSecrets } from './secrets.ts';
import { homeOf } from './status-home.ts';
import { CloudStore } from './store.ts';
import { backupJob, upgradeOrder } from './upgrade.ts';
import { describeWindow, windowAt } from './window.ts';

/** The OpenStackCloud's part of a plan (Plan.cloud): the Kubernetes objects its charts would change, and the steps in order. */
export interface CloudPlan {
  cloud: string;
  /** The Kubernetes namespace of its charts (a plan against the cluster; a plan between revisions has none). */
  namespace?: string;
  changes: CloudObjectChange[];
  /** The install steps, or the release change's steps, one line each. */
  steps: string[];
}

/** What driveCloud would change, against the live cluster, changing nothing (dry-run server-side apply); with the time each chart took. */
export async function planCloud(
  spec: OpenStackCloudSpec,
  opts: DriveOptions,
): Promise<CloudPlan & { millis: { render: Record<string, number>; diff: Record<string, number> } }> {
  const store = new CloudStore(opts.kubeConfig, opts.namespace, opts.cloud);
  const rendered = await renderWith(spec, store, opts, false);
  const kept = await store.load();
  // Standalone reads only: the ConfigMap's status, else the one the controller keeps on the OpenStackCloud.
  const { status } = await homeOf(store, kept, { kubeConfig: opts.kubeConfig, log: () => undefined });
  const diffOptions = { kubeConfig: opts.kubeConfig, namespace: opts.namespace, cloud: opts.cloud, fieldManager: opts.fieldManager, signal: opts.signal };
  const { changes, millis } = await diffLive(rendered, kept.inventory, diffOptions);
  const upgrading = status.release !== undefined && status.release !== spec.release;
  const steps = upgrading ? upgradePlan(spec, rendered, status, (opts.now ?? (() => new Date()))()) : installSteps(rendered).map(summariseStep);
  const render = Object.fromEntries(rendered.map((c) => [c.chart, c.millis.fetch + c.millis.render]));
  return { cloud: opts.cloud, namespace: opts.namespace, changes, steps, millis: { render, diff: millis } };
}

/** `plan --base` without a cluster: the two revisions' renders compared (same placeholder credentials on both sides). */
export async function planCloudBetween(cloud: string, base: OpenStackCloudSpec | undefined, head: OpenStackCloudSpec, baseDir: string): Promise<CloudPlan> {
  const secrets = generateSecrets((n) => Buffer.alloc(n));
  const work = await mkdtemp(join(tmpdir(), 'kupenstack-cloud-plan-'));
  try {
    const render = (spec: OpenStackCloudSpec, sub: string): Promise<RenderedChart[]> =>
      renderCloud({ spec, namespace: DEFAULT_CLOUD_NAMESPACE, secrets, helm: helmBinary(), workDir: join(work, sub), baseDir });
    const [b, h] = await Promise.all([base ? render(base, 'base') : Promise.resolve([]), render(head, 'head')]);
    const from = base?.release;
    return { cloud, changes: diffRenders(b, h), steps: from !== undefined && from !== head.release ? upgradePlan(head, h, { release: from }) : [] };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The steps of a release change, in order: the backup (or the one already taken), then one chart at a time. */
export function upgradePlan(spec: OpenStackCloudSpec, rendered: RenderedChart[], status: OpenStackCloudStatus, now = new Date()): string[] {
  const up = status.upgrade?.to === spec.release && status.upgrade.phase !== 'Succeeded' ? status.upgrade : undefined;
  const order = upgradeOrder(rendered);
  const start = Math.max(0, order.indexOf(up?.service ?? order[0]!));
  const job = backupJob(rendered, spec.release)?.name ?? '(none: the mariadb chart renders no backup CronJob; the upgrade would be refused)';
  const backup = up?.backup ? `backup: done (${up.backup}), not repeated` : `backup: Job ${job} runs to completion first`;
  const charts = order
    .slice(start)
    .map((chart, i) => `${start + i + 1}. ${chart}: configuration, Jobs by phase and weight, workloads gated, contract Jobs last`);
  return [`upgrade ${status.release} → ${spec.release}`, describeWindow(windowAt(spec.maintenanceWindow, now)), backup, ...charts];
}
