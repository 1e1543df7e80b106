import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubernetesObjectApi, VersionApi } from '@kubernetes/client-node';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import type { OpenStackCloudSpec, OpenStackCloudStatus } from '../model/kinds.generated.ts';
import { setCondition } from '../status/conditions.ts';
import { KupenstackError } from '../errors.ts';
import { NotYet } from '../../lib/not-yet.ts';
import type { CloudConfig } from '../openstack/clouds.ts';
import { adminAccess, adminCloudConfig, adminCloudsYaml } from './admin-clouds.ts';
import { applySteps, type CloudApplyOptions, type StepFailure } from './apply.ts';
import { checkTransition } from './transition.ts';
import { backupJob, upgradeOrder, upgradeSteps } from './upgrade.ts';
import { describeWindow, windowAt } from './window.ts';
import { diffLive, type CloudObjectChange } from './diff.ts';
import { helmBinary } from './helm.ts';
import { installSteps, summariseStep, type Step } from './phases.ts';
import { renderCloud, type RenderedChart } from './render-cloud.ts';
import { generateSecrets } from './secrets.ts';
import { CloudStore, entryKey, type InventoryEntry } from './store.ts';

/**
 * One OpenStackCloud made true in a Kubernetes cluster, the same for the standalone
 * `apply`/agent (the cloud read from Git, a kubeconfig) and the in-cluster controller (the
 * CR): render every enabled chart, apply the install steps in order with their gates, then
 * prune what the agent's inventory holds and the render no longer has. The inventory is
 * widened before anything is applied, so a killed run leaves nothing the next run does
 * not know. Status (per service readiness, Ready condition, the failing object) is kept
 * in the cloud's namespace and returned to the caller.
 */
/** What applySteps takes as it is (each step's start and gate are the in-cluster controller's Events; `requeue` its rollout's memory). */
type StepOptions = 'kubeConfig' | 'namespace' | 'cloud' | 'fieldManager' | 'stepDeadlineMs' | 'pollMs' | 'requeue' | 'log' | 'signal' | 'onStep' | 'beforeWrite';

export interface DriveOptions extends Pick<CloudApplyOptions, StepOptions> {
  /** Where a relative chart.path starts (the repository root). */
  baseDir: string;
  helm?: string;
  /** Pause an upgrade before this chart (the manifest's kupenstack.io/pause-upgrade-at annotation). */
  pauseAt?: string;
  /** The clock the maintenance window is read with (tests inject one). */
  now?: () => Date;
  /** Each status saved, as the run goes (the in-cluster controller copies it to the CR). */
  onStatus?: (status: OpenStackCloudStatus) => void;
}

export interface DriveResult {
  status: OpenStackCloudStatus;
  ready: boolean;
  failure?: StepFailure;
  pruned: string[];
  /** Outside the maintenance window: when the next one opens (the caller retries then). */
  waitUntil?: Date;
  /** A Ready cloud with Keystone: its admin as a client config (never logged; the caller reads the catalog with it). */
  admin?: CloudConfig;
}

export const DEFAULT_CLOUD_NAMESPACE = 'openstack';

export async function driveCloud(spec: OpenStackCloudSpec, opts: DriveOptions): Promise<DriveResult> {
  const store = new CloudStore(opts.kubeConfig, opts.namespace, opts.cloud, opts.onStatus);
  const log = opts.log ?? (() => undefined);
  await store.ensureNamespace();
  // The release rules against what is deployed (downgrade, skip-level, a second upgrade): nothing is applied when one fails.
  const refused = checkTransition({ status: (await store.load()).status }, spec);
  if (refused.length > 0) throw new KupenstackError(refused[0]!.code, `OpenStackCloud ${opts.cloud} ${refused[0]!.path.join('.')}: ${refused[0]!.message}; nothing was applied`);
  const rendered = await renderOnce(spec, store, opts);
  const state = await store.load();
  const inventory = rendered.flatMap((c) => c.objects.filter((o) => o.phase.kind !== 'delete').map((o): InventoryEntry => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.name })));
  const applying = { type: 'Reconciling', status: 'True' as const, reason: 'Applying', message: `applying ${rendered.length} charts of release ${spec.release}` };
  let status: OpenStackCloudStatus = { ...state.status, conditions: setCondition(state.status.conditions ?? [], applying) };
  await store.save({ inventory: [...state.inventory, ...inventory], status });

  // A gate not met in requeue mode: the status says what it waits for; the controller looks again.
  const notYet = async (err: unknown): Promise<never> => {
    if (err instanceof NotYet) {
      const latest = (await store.load()).status;
      const waiting = { type: 'Reconciling', status: 'True' as const, reason: 'Progressing', message: `waiting: ${err.reason}` };
      await store.save({ inventory: [...state.inventory, ...inventory], status: { ...latest, conditions: setCondition(latest.conditions ?? [], waiting) } });
    }
    throw err;
  };

  // A release change: backup, then one chart at a time; the full apply below runs once it finished.
  if (state.status.release !== undefined && state.status.release !== spec.release) {
    const up = await upgrade(spec, rendered, { ...state, status }, store, opts).catch(notYet);
    if (up) return up;
    status = (await store.load()).status;
  }

  const steps = installSteps(rendered);
  const result = await applySteps(steps, applyOptions(opts, log)).catch(notYet);
  const failedGroup = result.failure ? Number(result.failure.step.split(':')[0]) : Infinity;
  const groupOf = new Map(steps.flatMap((s) => s.charts.map((c) => [c, s.group] as const)));
  const services: NonNullable<OpenStackCloudStatus['services']> = {};
  for (const c of rendered) {
    const group = groupOf.get(c.chart) ?? 0;
    const ready = group < failedGroup;
    const failing =
      result.failure &&
      group === failedGroup &&
      steps.some((s) => s.group === group && s.charts.includes(c.chart) && s.objects.some((o) => o.chart === c.chart && o.name === result.failure!.name));
    const why = failing ? failureText(result.failure!) : group === failedGroup ? 'its group did not pass its gate' : 'waits for an earlier group';
    services[c.chart] = { ready, release: ready ? spec.release : state.status.services?.[c.chart]?.release, chartVersion: c.version, ...(ready ? {} : { message: why }) };
  }

  const pruned: string[] = [];
  if (!result.failure) {
    const keep = new Set(inventory.map(entryKey));
    const api = KubernetesObjectApi.makeApiClient(opts.kubeConfig);
    for (const e of state.inventory.filter((x) => !keep.has(entryKey(x)))) {
      const object = { apiVersion: e.apiVersion, kind: e.kind, metadata: { name: e.name, namespace: opts.namespace } };
      await api.delete(object, undefined, undefined, undefined, undefined, 'Background').catch((err: unknown) => {
        if (!isKubeStatus(err, 404)) throw kubeApiError(`prune ${e.kind}/${e.name}`, err);
      });
      pruned.push(`${e.kind}/${e.name}`);
      log(`cloud prune ${e.kind}/${e.name}: no longer rendered`);
    }
  }

  const now = new Date();
  const f = result.failure;
  const reconciling = f ? { reason: 'Failed', message: 'stopped on a failure' } : { reason: 'Applied', message: `release ${spec.release} applied` };
  let conditions = setCondition(status.conditions ?? [], { type: 'Reconciling', status: 'False', ...reconciling }, now);
  const ready = f
    ? { type: 'Ready', status: 'False' as const, reason: 'StepFailed', message: `${f.step}: ${failureText(f)}` }
    : { type: 'Ready', status: 'True' as const, reason: 'Ready', message: `every workload of ${rendered.length} charts is ready` };
  conditions = setCondition(conditions, ready, now);
  const stalled = f ? { status: 'True' as const, reason: 'StepFailed', message: failureText(f) } : { status: 'False' as const, reason: 'Ready', message: '' };
  conditions = setCondition(conditions, { type: 'Stalled', ...stalled }, now);
  status = { ...status, conditions, services, lastSyncTime: now.toISOString(), ...(result.failure ? {} : { release: spec.release }) };
  // A Ready cloud's admin clouds.yaml is (re)written and named in status: the resource loop picks the cloud up from it.
  const admin = result.failure ? undefined : await writeAdminAccess(spec, rendered, store, opts.cloud);
  if (admin) status = { ...status, cloudsSecret: admin.secret };
  await store.save({ inventory: result.failure ? [...state.inventory, ...inventory] : inventory, status });
  log(
    result.failure
      ? `cloud ${opts.cloud}: stopped at ${result.failure.step}: ${failureText(result.failure)}`
      : `cloud ${opts.cloud}: Ready (release ${spec.release}, ${steps.length} steps${pruned.length ? `, ${pruned.length} pruned` : ''})`,
  );
  return { status, ready: !result.failure, failure: result.failure, pruned, ...(admin ? { admin: admin.config } : {}) };
}

/** The install's admin as a clouds.yaml Secret, and as the client config the caller reads the catalog with. */
async function writeAdminAccess(
  spec: OpenStackCloudSpec,
  rendered: RenderedChart[],
  store: CloudStore,
  cloud: string,
): Promise<{ secret: NonNullable<OpenStackCloudStatus['cloudsSecret']>; config: CloudConfig } | undefined> {
  const secrets = await store.readSecrets();
  const access = secrets && adminAccess(cloud, spec, rendered.find((c) => c.identityUrl)?.identityUrl, secrets);
  if (!access) return undefined;
  const ref = await store.writeCloudsYaml(adminCloudsYaml(access));
  return { secret: { ...ref, cloud: access.cloud, authUrl: access.authUrl }, config: adminCloudConfig(access, `Secret ${ref.namespace}/${ref.name}`) };
}

/**
 * Runs (or resumes) the upgrade from status.release to spec.release, persisting progress
 * before each step: a killed agent resumes at the chart it was at, and does not back up
 * again once status says the backup is done. Returns a result when it stopped (failure,
 * pause), undefined when every chart runs the new release. `apply` is applySteps (a unit test
 * records the order of the steps instead).
 */
export async function upgrade(
  spec: OpenStackCloudSpec,
  rendered: RenderedChart[],
  state: { inventory: InventoryEntry[]; status: OpenStackCloudStatus },
  store: Pick<CloudStore, 'save'>,
  opts: DriveOptions,
  apply: typeof applySteps = applySteps,
): Promise<DriveResult | undefined> {
  const log = opts.log ?? (() => undefined);
  const from = state.status.release!;
  const to = spec.release;
  const running = state.status.upgrade;
  const resumes = running && running.to === to && running.from === from && running.phase !== 'Succeeded';
  let up: NonNullable<OpenStackCloudStatus['upgrade']> = resumes ? { ...running } : { from, to, phase: 'Backup', startedAt: new Date().toISOString() };
  let status: OpenStackCloudStatus = { ...state.status, upgrade: up };
  const save = async (extra: Partial<OpenStackCloudStatus> = {}): Promise<void> => {
    status = { ...status, ...extra, upgrade: up };
    await store.save({ inventory: state.inventory, status });
  };
  const order = upgradeOrder(rendered);
  const stop = async (failure: StepFailure, reason: string): Promise<DriveResult> => {
    const services = { ...status.services };
    const at = order.indexOf(up.service ?? '');
    order.forEach((chart, i) => {
      const version = rendered.find((c) => c.chart === chart)?.version;
      if (i < at) services[chart] = { ready: true, release: to, chartVersion: version };
      else if (i === at) services[chart] = { ready: false, release: from, message: failureText(failure) };
      else services[chart] = { ...services[chart], release: from };
    });
    const message = `upgrade ${from} → ${to} stopped at ${up.step ?? up.phase}: ${failureText(failure)}`;
    const readyFalse = setCondition(status.conditions ?? [], { type: 'Ready', status: 'False', reason, message });
    const conditions = setCondition(readyFalse, { type: 'Stalled', status: 'True', reason, message: failureText(failure) });
    await save({ services, conditions });
    log(`cloud ${opts.cloud}: upgrade ${from} → ${to} stopped at ${up.step ?? up.phase}: ${failureText(failure)}`);
    return { status, ready: false, failure, pruned: [] };
  };
  // No new step starts outside the window; the step already running finished before this is asked again.
  // `next` is the chart that would start: progress points at it, so the next window resumes there (not at the finished one).
  const outside = async (next?: string): Promise<DriveResult | undefined> => {
    const w = windowAt(spec.maintenanceWindow, (opts.now ?? (() => new Date()))());
    if (w.open) return undefined;
    if (next) up = { ...up, service: next, step: next };
    const message = `upgrade ${from} → ${to} waits before ${up.step ?? 'its first step'}: ${describeWindow(w)}`;
    await save({ conditions: setCondition(status.conditions ?? [], { type: 'Ready', status: 'False', reason: 'OutsideMaintenanceWindow', message }) });
    log(`cloud ${opts.cloud}: upgrade waits: ${describeWindow(w)}`);
    return { status, ready: false, pruned: [], waitUntil: w.opensAt };
  };
  const run = (steps: Step[]) => apply(steps, applyOptions(opts, log));

  if (!up.backup) {
    const wait = await outside();
    if (wait) return wait;
    up = { ...up, phase: 'Backup', step: 'backup' };
    await save();
    const job = backupJob(rendered, to);
    if (!job) {
      const reason = "the mariadb chart renders no backup CronJob; an upgrade needs a backup first: enable the mariadb chart's backup (manifests.cron_job_mariadb_backup)";
      return stop({ step: 'backup', kind: 'CronJob', name: 'mariadb-backup', reason }, 'BackupFailed');
    }
    log(`cloud ${opts.cloud}: upgrade ${from} → ${to}: backup Job ${job.name} first`);
    const result = await run([{ kind: 'hooks', group: 0, charts: ['mariadb'], weight: 0, when: 'pre', objects: [job] }]);
    if (result.failure) {
      up = { ...up, phase: 'Failed' };
      await save({ lastBackup: { time: new Date().toISOString(), location: `Job ${opts.namespace}/${job.name}`, result: 'Failed' } });
      return stop({ ...result.failure, step: 'backup' }, 'BackupFailed');
    }
    up = { ...up, backup: `Job ${opts.namespace}/${job.name}` };
    await save({ lastBackup: { time: new Date().toISOString(), location: up.backup, result: 'Succeeded' } });
  }
  const start = Math.max(0, order.indexOf(up.service ?? order[0]!));
  for (let i = start; i < order.length; i++) {
    const chart = order[i]!;
    if (opts.pauseAt === chart) {
      up = { ...up, service: chart, step: `${chart} (paused)` };
      const message = `upgrade ${from} → ${to} paused before ${chart} (annotation kupenstack.io/pause-upgrade-at); remove it to go on`;
      await save({ conditions: setCondition(status.conditions ?? [], { type: 'Ready', status: 'False', reason: 'UpgradePaused', message }) });
      log(`cloud ${opts.cloud}: upgrade paused before ${chart}`);
      return { status, ready: false, pruned: [] };
    }
    const wait = await outside(chart);
    if (wait) return wait;
    up = { ...up, phase: 'Upgrading', service: chart, step: chart };
    await save();
    log(`cloud ${opts.cloud}: upgrade ${from} → ${to}: ${chart} (${i + 1} of ${order.length})`);
    const result = await run(upgradeSteps(rendered.find((c) => c.chart === chart)!, i));
    if (result.failure) {
      up = { ...up, phase: 'Failed', step: `${chart}/${result.failure.kind}/${result.failure.name}` };
      return stop(result.failure, 'UpgradeFailed');
    }
    status = { ...status, services: { ...status.services, [chart]: { ready: true, release: to, chartVersion: rendered.find((c) => c.chart === chart)?.version } } };
  }
  up = { ...up, phase: 'Succeeded', step: undefined, service: undefined };
  await save();
  return undefined;
}

export interface CloudPlan {
  changes: CloudObjectChange[];
  /** The install steps, one line each. */
  steps: string[];
  millis: { render: Record<string, number>; diff: Record<string, number> };
}

/** What driveCloud would change, against the live cluster, changing nothing (dry-run server-side apply). */
export async function planCloud(spec: OpenStackCloudSpec, opts: DriveOptions): Promise<CloudPlan> {
  const store = new CloudStore(opts.kubeConfig, opts.namespace, opts.cloud);
  const rendered = await render(spec, store, opts, false);
  const { inventory, status } = await store.load();
  const { changes, millis } = await diffLive(rendered, inventory, { kubeConfig: opts.kubeConfig, namespace: opts.namespace, cloud: opts.cloud, fieldManager: opts.fieldManager, signal: opts.signal });
  const upgrading = status.release !== undefined && status.release !== spec.release;
  const steps = upgrading ? upgradePlan(spec, rendered, status, (opts.now ?? (() => new Date()))()) : installSteps(rendered).map(summariseStep);
  return { changes, steps, millis: { render: Object.fromEntries(rendered.map((c) => [c.chart, c.millis.fetch + c.millis.render])), diff: millis } };
}

/** The steps of a release change, in order: the backup (or the one already taken), then one chart at a time. */
export function upgradePlan(spec: OpenStackCloudSpec, rendered: RenderedChart[], status: OpenStackCloudStatus, now = new Date()): string[] {
  const up = status.upgrade?.to === spec.release && status.upgrade.phase !== 'Succeeded' ? status.upgrade : undefined;
  const order = upgradeOrder(rendered);
  const start = Math.max(0, order.indexOf(up?.service ?? order[0]!));
  const job = backupJob(rendered, spec.release)?.name ?? '(none: the mariadb chart renders no backup CronJob; the upgrade would be refused)';
  const backup = up?.backup ? `backup: done (${up.backup}), not repeated` : `backup: Job ${job} runs to completion first`;
  const charts = order.slice(start).map((chart, i) => `${start + i + 1}. ${chart}: configuration, Jobs by phase and weight, workloads gated, contract Jobs last`);
  return [`upgrade ${status.release} → ${spec.release}`, describeWindow(windowAt(spec.maintenanceWindow, now)), backup, ...charts];
}

/** `create Deployment/keystone-api [keystone]`, image changes on their own lines. */
export function formatCloudChange(c: CloudObjectChange): string[] {
  const more = c.fields && c.fields.length > 6 ? ` and ${c.fields.length - 6} more` : '';
  const fields = c.fields && c.action === 'update' ? `: ${c.fields.slice(0, 6).join(', ')}${more}` : '';
  const head = `${c.action} ${c.kind}/${c.name}${c.chart ? ` [${c.chart}]` : ''}${fields}`;
  return [head, ...(c.images ?? []).filter(() => c.action !== 'create').map((i) => `    image ${i.container}: ${i.from ?? '(none)'} → ${i.to ?? '(none)'}`)];
}

export function failureText(f: StepFailure): string {
  return `${f.kind}/${f.name}: ${f.reason}${f.exitCode !== undefined ? ` (exit code ${f.exitCode})` : ''}${f.logTail ? `; log: ${f.logTail.trim().split('\n').slice(-5).join(' | ')}` : ''}`;
}

/** What applySteps is given, the same for the install and each upgrade step. */
const applyOptions = (opts: DriveOptions, log: (line: string) => void): CloudApplyOptions => ({
  kubeConfig: opts.kubeConfig,
  namespace: opts.namespace,
  cloud: opts.cloud,
  fieldManager: opts.fieldManager,
  stepDeadlineMs: opts.stepDeadlineMs,
  pollMs: opts.pollMs,
  ...(opts.requeue ? { requeue: opts.requeue } : {}),
  log,
  signal: opts.signal,
  onStep: opts.onStep,
  beforeWrite: opts.beforeWrite,
});

/** The render of this spec; in requeue mode the rollout's own, rendered at its first pass. */
async function renderOnce(spec: OpenStackCloudSpec, store: CloudStore, opts: DriveOptions): Promise<RenderedChart[]> {
  const key = JSON.stringify([spec, opts.namespace, opts.baseDir]);
  const kept = opts.requeue?.rendered;
  if (kept?.key === key) return kept.charts;
  const charts = await render(spec, store, opts);
  if (opts.requeue) opts.requeue.rendered = { key, charts };
  return charts;
}

async function render(spec: OpenStackCloudSpec, store: CloudStore, opts: DriveOptions, create = true): Promise<RenderedChart[]> {
  // A plan never writes: without the stored secrets (a cloud not yet installed) it renders with placeholders.
  const secrets = (create ? await store.secrets() : await store.readSecrets()) ?? generateSecrets((n) => Buffer.alloc(n));
  const kubeVersion = await opts.kubeConfig.makeApiClient(VersionApi).getCode().then((v) => v.gitVersion).catch(() => undefined);
  const workDir = await mkdtemp(join(tmpdir(), 'kupenstack-cloud-'));
  try {
    return await renderCloud({ spec, namespace: opts.namespace, secrets, helm: opts.helm ?? helmBinary(), workDir, baseDir: opts.baseDir, kubeVersion, signal: opts.signal });
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
