import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubernetesObjectApi, VersionApi } from '@kubernetes/client-node';
import type { Progress } from '../../lib/progress.ts';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import type { OpenStackCloudSpec, OpenStackCloudStatus } from '../model/kinds.generated.ts';
import { setCondition } from '../status/conditions.ts';
import { KupenstackError } from '../errors.ts';
import type { CloudConfig } from '../openstack/clouds.ts';
import { adminAccess, adminCloudConfig, adminCloudsYaml } from './admin-clouds.ts';
import { applySteps, failureText, type CloudApplyOptions, type CloudApplyResult, type StepEntry, type StepFailure } from './apply.ts';
import { checkTransition } from './transition.ts';
import { helmBinary } from './helm.ts';
import { installSteps, type Step } from './phases.ts';
import { renderCloud, type RenderedChart } from './render-cloud.ts';
import { generateSecrets } from './secrets.ts';
import { homeOf, type CloudStatusHome } from './status-home.ts';
import { CloudStore, entryKey, type InventoryEntry } from './store.ts';
import { CloudUpgrade, type UpgradeOptions } from './upgrade-run.ts';

/**
 * One OpenStackCloud made true in a Kubernetes cluster, the same for the standalone
 * `apply`/agent (the cloud read from Git, a kubeconfig) and the in-cluster controller (the
 * CR): render every enabled chart, apply the install steps in order with their gates, then
 * prune what the agent's inventory holds and the render no longer has. The inventory is
 * widened before anything is applied, so a killed run leaves nothing the next run does
 * not know. The status (per service readiness, Ready condition, the failing object) is kept
 * in its one home (status-home.ts) as the run goes and returned to the caller with the steps
 * it started and, in requeue mode, the gate it waits for.
 */
/** What applySteps takes as it is (`requeue`: one look per gate; `rollout`: what this rollout's earlier passes did). */
type StepOptions = 'kubeConfig' | 'namespace' | 'cloud' | 'fieldManager' | 'stepDeadlineMs' | 'pollMs' | 'requeue' | 'rollout' | 'log' | 'signal';

export interface DriveOptions extends Pick<CloudApplyOptions, StepOptions> {
  /** Where a relative chart.path starts (the repository root). */
  baseDir: string;
  helm?: string;
  /** Pause an upgrade before this chart (the manifest's kupenstack.io/pause-upgrade-at annotation). */
  pauseAt?: string;
  /** The clock the maintenance window is read with (tests inject one). */
  now?: () => Date;
  /** The status's home when it is not the cloud's ConfigMap: the in-cluster controller's CR status. */
  home?: CloudStatusHome;
}

export interface DriveResult {
  status: OpenStackCloudStatus;
  ready: boolean;
  failure?: StepFailure;
  pruned: string[];
  /** Outside the maintenance window: when the next one opens (the caller retries then). */
  waitUntil?: Date;
  /** Requeue mode: the gate the rollout waits at; the caller looks again after `afterMs`. */
  waiting?: Progress;
  /** The steps this pass started and the gates it passed, in order (the controller's Events). */
  stepLog: StepEntry[];
  /** A Ready cloud with Keystone: its admin as a client config (never logged; the caller reads the catalog with it). */
  admin?: CloudConfig;
}

export const DEFAULT_CLOUD_NAMESPACE = 'openstack';

export async function driveCloud(spec: OpenStackCloudSpec, opts: DriveOptions): Promise<DriveResult> {
  const store = new CloudStore(opts.kubeConfig, opts.namespace, opts.cloud);
  await store.ensureNamespace();
  const kept = await store.load();
  const { home, status: stored } = await homeOf(store, kept, { home: opts.home, kubeConfig: opts.kubeConfig, log: opts.log ?? (() => undefined) });
  // The release rules against what is deployed (downgrade, skip-level, a second upgrade): nothing is applied when one fails.
  const refused = checkTransition({ status: stored }, spec);
  if (refused.length > 0)
    throw new KupenstackError(refused[0]!.code, `OpenStackCloud ${opts.cloud} ${refused[0]!.path.join('.')}: ${refused[0]!.message}; nothing was applied`);
  const rendered = await renderOnce(spec, store, opts);
  const inventory = rendered.flatMap((c) =>
    c.objects.filter((o) => o.phase.kind !== 'delete').map((o): InventoryEntry => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.name })),
  );
  const widened = [...kept.inventory, ...inventory];
  if (!sameEntries(widened, kept.inventory)) await store.save({ inventory: widened });
  const applying = {
    type: 'Reconciling',
    status: 'True' as const,
    reason: 'Applying',
    message: `applying ${rendered.length} charts of release ${spec.release}`,
  };
  let status: OpenStackCloudStatus = { ...stored, conditions: setCondition(stored.conditions ?? [], applying) };
  await home.save({ status });
  const stepLog: StepEntry[] = [];

  // A release change: backup, then one chart at a time; the full apply below runs once it finished.
  if (stored.release !== undefined && stored.release !== spec.release) {
    const up = new CloudUpgrade(spec, rendered, status, home, upgradeOptions(opts));
    const stopped = await up.run();
    stepLog.push(...up.stepLog);
    if (stopped?.waiting) return waitAt(stopped.waiting, stopped.status, home, stepLog);
    if (stopped) return { ...stopped, ready: false, pruned: [], stepLog };
    status = up.status;
  }

  const steps = installSteps(rendered);
  const result = await applySteps(steps, applyOptions(opts));
  stepLog.push(...(result.stepLog ?? []));
  if (result.waiting) return waitAt(result.waiting, status, home, stepLog);
  const pruned = result.failure ? [] : await prune(kept.inventory, inventory, opts);
  if (!result.failure && !sameEntries(inventory, widened)) await store.save({ inventory });
  status = { ...status, ...settled(spec, rendered, steps, result, { before: stored, current: status }), ...(result.failure ? {} : { release: spec.release }) };
  // A Ready cloud's admin clouds.yaml is (re)written and named in status: the resource loop picks the cloud up from it.
  const admin = result.failure ? undefined : await writeAdminAccess(spec, rendered, store, opts.cloud);
  if (admin) status = { ...status, cloudsSecret: admin.secret };
  await home.save({ status });
  opts.log?.(
    result.failure
      ? `cloud ${opts.cloud}: stopped at ${result.failure.step}: ${failureText(result.failure)}`
      : `cloud ${opts.cloud}: Ready (release ${spec.release}, ${steps.length} steps${pruned.length ? `, ${pruned.length} pruned` : ''})`,
  );
  return { status, ready: !result.failure, failure: result.failure, pruned, stepLog, ...(admin ? { admin: admin.config } : {}) };
}

/** A gate not met in requeue mode: the status says what it waits for; the caller looks again. */
async function waitAt(waiting: Progress, latest: OpenStackCloudStatus, home: CloudStatusHome, stepLog: StepEntry[]): Promise<DriveResult> {
  const progressing = { type: 'Reconciling', status: 'True' as const, reason: 'Progressing', message: `waiting: ${waiting.reason}` };
  const status = { ...latest, conditions: setCondition(latest.conditions ?? [], progressing) };
  await home.save({ status });
  return { status, ready: false, pruned: [], waiting, stepLog };
}

/** The services, conditions and sync time after the full apply: ready up to the group that failed, the failure named; a chart not ready keeps the release it had `before` the pass. */
type StatusAt = { before: OpenStackCloudStatus; current: OpenStackCloudStatus };
function settled(spec: OpenStackCloudSpec, rendered: RenderedChart[], steps: Step[], result: CloudApplyResult, at: StatusAt): OpenStackCloudStatus {
  const f = result.failure;
  const failedGroup = f ? Number(f.step.split(':')[0]) : Infinity;
  const groupOf = new Map(steps.flatMap((s) => s.charts.map((c) => [c, s.group] as const)));
  const services: NonNullable<OpenStackCloudStatus['services']> = {};
  for (const c of rendered) {
    const group = groupOf.get(c.chart) ?? 0;
    const ready = group < failedGroup;
    const failing =
      f &&
      group === failedGroup &&
      steps.some((s) => s.group === group && s.charts.includes(c.chart) && s.objects.some((o) => o.chart === c.chart && o.name === f.name));
    const why = failing ? failureText(f) : group === failedGroup ? 'its group did not pass its gate' : 'waits for an earlier group';
    services[c.chart] = {
      ready,
      release: ready ? spec.release : at.before.services?.[c.chart]?.release,
      chartVersion: c.version,
      ...(ready ? {} : { message: why }),
    };
  }
  const now = new Date();
  const reconciling = f ? { reason: 'Failed', message: 'stopped on a failure' } : { reason: 'Applied', message: `release ${spec.release} applied` };
  let conditions = setCondition(at.current.conditions ?? [], { type: 'Reconciling', status: 'False', ...reconciling }, now);
  const ready = f
    ? { type: 'Ready', status: 'False' as const, reason: 'StepFailed', message: `${f.step}: ${failureText(f)}` }
    : { type: 'Ready', status: 'True' as const, reason: 'Ready', message: `every workload of ${rendered.length} charts is ready` };
  conditions = setCondition(conditions, ready, now);
  const stalled = f ? { status: 'True' as const, reason: 'StepFailed', message: failureText(f) } : { status: 'False' as const, reason: 'Ready', message: '' };
  conditions = setCondition(conditions, { type: 'Stalled', ...stalled }, now);
  return { conditions, services, lastSyncTime: now.toISOString() };
}

/** Deletes what the inventory holds and the render no longer has; the names deleted. */
async function prune(before: InventoryEntry[], now: InventoryEntry[], opts: DriveOptions): Promise<string[]> {
  const keep = new Set(now.map(entryKey));
  const api = KubernetesObjectApi.makeApiClient(opts.kubeConfig);
  const pruned: string[] = [];
  for (const e of before.filter((x) => !keep.has(entryKey(x)))) {
    const object = { apiVersion: e.apiVersion, kind: e.kind, metadata: { name: e.name, namespace: opts.namespace } };
    await api.delete(object, undefined, undefined, undefined, undefined, 'Background').catch((err: unknown) => {
      if (!isKubeStatus(err, 404)) throw kubeApiError(`prune ${e.kind}/${e.name}`, err);
    });
    pruned.push(`${e.kind}/${e.name}`);
    opts.log?.(`cloud prune ${e.kind}/${e.name}: no longer rendered`);
  }
  return pruned;
}

const sameEntries = (a: InventoryEntry[], b: InventoryEntry[]): boolean => {
  const keys = (l: InventoryEntry[]): string => [...new Set(l.map(entryKey))].sort().join('\n');
  return keys(a) === keys(b);
};

/** The install's admin as a clouds.yaml Secret, and as the client config the caller reads the catalog with. */
type AdminWritten = { secret: NonNullable<OpenStackCloudStatus['cloudsSecret']>; config: CloudConfig };
async function writeAdminAccess(spec: OpenStackCloudSpec, rendered: RenderedChart[], store: CloudStore, cloud: string): Promise<AdminWritten | undefined> {
  const secrets = await store.readSecrets();
  const access = secrets && adminAccess(cloud, spec, rendered.find((c) => c.identityUrl)?.identityUrl, secrets);
  if (!access) return undefined;
  const ref = await store.writeCloudsYaml(adminCloudsYaml(access));
  return { secret: { ...ref, cloud: access.cloud, authUrl: access.authUrl }, config: adminCloudConfig(access, `Secret ${ref.namespace}/${ref.name}`) };
}

/** What applySteps is given, the same for the install and each upgrade step. */
const applyOptions = (opts: DriveOptions): CloudApplyOptions => ({
  kubeConfig: opts.kubeConfig,
  namespace: opts.namespace,
  cloud: opts.cloud,
  fieldManager: opts.fieldManager,
  stepDeadlineMs: opts.stepDeadlineMs,
  pollMs: opts.pollMs,
  requeue: opts.requeue,
  rollout: opts.rollout,
  log: opts.log,
  signal: opts.signal,
});

const upgradeOptions = (opts: DriveOptions): UpgradeOptions => ({
  cloud: opts.cloud,
  namespace: opts.namespace,
  pauseAt: opts.pauseAt,
  now: opts.now,
  log: opts.log,
  steps: applyOptions(opts),
});

/** The render of this spec; in requeue mode the rollout's own, rendered at its first pass. */
async function renderOnce(spec: OpenStackCloudSpec, store: CloudStore, opts: DriveOptions): Promise<RenderedChart[]> {
  const key = JSON.stringify([spec, opts.namespace, opts.baseDir]);
  const kept = opts.rollout?.rendered;
  if (kept?.key === key) return kept.charts;
  const charts = await renderWith(spec, store, opts);
  if (opts.rollout) opts.rollout.rendered = { key, charts };
  return charts;
}

/** The charts of this spec rendered with the cloud's credentials; a plan (`create` false) never writes: placeholders until they exist. */
type RenderOptions = Pick<DriveOptions, 'kubeConfig' | 'namespace' | 'baseDir' | 'helm' | 'signal'>;
export async function renderWith(spec: OpenStackCloudSpec, store: CloudStore, opts: RenderOptions, create = true): Promise<RenderedChart[]> {
  const secrets = (create ? await store.secrets() : await store.readSecrets()) ?? generateSecrets((n) => Buffer.alloc(n));
  const kubeVersion = await opts.kubeConfig
    .makeApiClient(VersionApi)
    .getCode()
    .then((v) => v.gitVersion)
    .catch(() => undefined);
  const workDir = await mkdtemp(join(tmpdir(), 'kupenstack-cloud-'));
  try {
    return await renderCloud({
      spec,
      namespace: opts.namespace,
      secrets,
      helm: opts.helm ?? helmBinary(),
      workDir,
      baseDir: opts.baseDir,
      kubeVersion,
      signal: opts.signal,
    });
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
