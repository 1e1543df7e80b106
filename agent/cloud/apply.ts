import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { isWaiting, waiting, type Looked, type Progress } from '../../lib/progress.ts';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import { imagesVerdict, jobFailureDetail, rolloutVerdict, type Verdict } from './gates.ts';
import { describeStep, type Step } from './phases.ts';
import type { RenderedObject } from './render.ts';
import { newRolloutMemory, type RolloutMemory } from './rollout.ts';

/**
 * Runs the steps of a cloud in order against the cluster: server-side apply with the
 * agent's field manager (no Helm release Secrets), Jobs replaced — deleted and created —
 * when their rendered template changed (a Job's pod template is immutable) and kept when
 * it did not (a completed db-sync is not rerun), then each gate until ready or the step's
 * deadline. On the first failure it stops: later steps are not touched, and the failure
 * names the object, the reason, the pod's exit code and the tail of its log. With `requeue`
 * (the controller) a gate not met yet is looked at once and the result says what it waits
 * for (a Progress), so no worker is held while a chart rolls out; without (standalone) the
 * same look is repeated until done.
 */
export interface CloudApplyOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** OpenStackCloud name: label kupenstack.io/cloud on every object. */
  cloud: string;
  fieldManager?: string;
  /** Per step, default 1200 s (Rockoon's wait_application_ready_timeout). */
  stepDeadlineMs?: number;
  /** Between two looks at a gate in wait mode (default 1 s); requeue mode's longest look again (default 10 s). */
  pollMs?: number;
  /** Progress by requeue: one look per gate; a gate not met ends the run with a Progress. */
  requeue?: boolean;
  /** What this rollout's earlier passes did (requeue mode); a run without one starts afresh. */
  rollout?: RolloutMemory;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

export interface StepFailure {
  step: string;
  kind: string;
  name: string;
  reason: string;
  exitCode?: number;
  pod?: string;
  logTail?: string;
}

/** A step started, or its gate passed: what the in-cluster controller records as Events on the cloud. */
export interface StepEntry {
  step: string;
  event: 'started' | 'gate passed';
}

export interface CloudApplyResult {
  done: string[];
  failure?: StepFailure;
  /** Requeue mode: the gate (or the Job replaced) not ready yet; the steps after it were not touched. */
  waiting?: Progress;
  /** What this run started and passed, in order (finished steps of earlier passes are not in it). */
  stepLog?: StepEntry[];
}

/** A failure in one line: the object, the reason, a Job's exit code and the end of its log. */
export function failureText(f: StepFailure): string {
  return `${f.kind}/${f.name}: ${f.reason}${f.exitCode !== undefined ? ` (exit code ${f.exitCode})` : ''}${f.logTail ? `; log: ${f.logTail.trim().split('\n').slice(-5).join(' | ')}` : ''}`;
}

export const TEMPLATE_HASH = 'kupenstack.io/template-hash';

/** How a step ended when it did not pass: a failure, or (requeue mode) a look again. */
type StepEnd = { failure: StepFailure } | { waiting: Progress } | undefined;

export async function applySteps(steps: readonly Step[], opts: CloudApplyOptions): Promise<CloudApplyResult> {
  const api = KubernetesObjectApi.makeApiClient(opts.kubeConfig);
  const core = opts.kubeConfig.makeApiClient(CoreV1Api);
  const log = opts.log ?? (() => undefined);
  const rollout = opts.rollout ?? newRolloutMemory();
  const done: string[] = [];
  const stepLog: StepEntry[] = [];
  for (const step of steps) {
    const whole = describeStep(step);
    const label = whole.split(' ').slice(0, 2).join(' ');
    // An earlier pass of this rollout finished it (requeue mode).
    if (rollout.done.has(whole)) {
      done.push(label);
      continue;
    }
    log(`cloud step ${label}: ${step.objects.length} objects`);
    stepLog.push({ step: label, event: 'started' });
    const ended = await runStep(step, label, opts, { api, core }, rollout);
    if (ended) return { done, stepLog, ...ended };
    done.push(label);
    rollout.gateSince.delete(label);
    rollout.done.add(whole);
    if (step.kind !== 'apply') stepLog.push({ step: label, event: 'gate passed' });
  }
  return { done, stepLog };
}

type Clients = { api: KubernetesObjectApi; core: CoreV1Api };

/** One step: its objects written (a gate step writes none), then its gate looked at (an apply step has none). */
async function runStep(step: Step, label: string, opts: CloudApplyOptions, clients: Clients, rollout: RolloutMemory): Promise<StepEnd> {
  try {
    if (step.kind !== 'gate') {
      for (const o of step.objects) {
        const ended = await writeObject(o, label, opts, clients.api, rollout);
        if (ended) return ended;
      }
    }
    return step.kind === 'apply' ? undefined : await gate(step, label, opts, clients, rollout);
  } catch (err) {
    // A run stopped from outside (leadership lost, the CR deleted) is not this step's failure.
    if (opts.signal?.aborted) throw err;
    return { failure: { step: label, kind: 'step', name: label, reason: (err as Error).message } };
  }
}

/** One object server-side applied, or a Job kept or replaced (its uid remembered for the gate). */
async function writeObject(o: RenderedObject, label: string, opts: CloudApplyOptions, api: KubernetesObjectApi, rollout: RolloutMemory): Promise<StepEnd> {
  try {
    if (o.kind !== 'Job') {
      await api.patch(desired(o, opts), undefined, undefined, opts.fieldManager ?? 'kupenstack', true, PatchStrategy.ServerSideApply);
      return undefined;
    }
    const job = await ensureJob(api, o, opts);
    if (isWaiting(job)) return job;
    rollout.jobs.set(o.name, job.done);
    return undefined;
  } catch (err) {
    // A call cut by the run's stop (leadership lost mid-call: `fetch failed`) is the stop, not this object's failure.
    if (opts.signal?.aborted) throw err;
    const e = kubeApiError(`apply ${o.kind}/${o.name} of chart ${o.chart}${o.template ? ` (${o.template})` : ''}`, err);
    return { failure: { step: label, kind: o.kind, name: o.name, reason: e.message } };
  }
}

/** The object as the agent applies it: in the cloud's namespace, labelled with the cloud and the chart. */
export function desired(o: RenderedObject, opts: { namespace: string; cloud: string }): KubernetesObject {
  const object = structuredClone(o.object) as unknown as KubernetesObject & { metadata: NonNullable<KubernetesObject['metadata']> };
  object.metadata.namespace = opts.namespace;
  object.metadata.labels = { ...object.metadata.labels, 'kupenstack.io/cloud': opts.cloud, 'kupenstack.io/chart': o.chart };
  return object;
}

/** A Job's identity: a live Job with another hash is replaced (its pod template is immutable). */
export const jobTemplateHash = (o: RenderedObject): string => createHash('sha256').update(JSON.stringify(o.object)).digest('hex').slice(0, 16);

/** A Job as rendered: kept when the live one has the same template hash, else replaced. Its uid, or (requeue mode) a look again while the old one goes. */
async function ensureJob(api: KubernetesObjectApi, o: RenderedObject, opts: CloudApplyOptions): Promise<Looked<string>> {
  const want = desired(o, opts);
  const hash = jobTemplateHash(o);
  want.metadata!.annotations = { ...want.metadata!.annotations, [TEMPLATE_HASH]: hash };
  const header = { apiVersion: want.apiVersion!, kind: want.kind!, metadata: { name: want.metadata!.name!, namespace: opts.namespace } };
  const live = await api.read(header).catch((err: unknown) => {
    if (isKubeStatus(err, 404)) return undefined;
    throw err;
  });
  if (live?.metadata?.annotations?.[TEMPLATE_HASH] === hash) return { done: live.metadata.uid! };
  if (live) {
    // A pass in requeue mode may find the Job it asked to delete still going: asked once, not again.
    if (!live.metadata?.deletionTimestamp) {
      opts.log?.(`cloud job ${o.name}: template changed, replacing`);
      await api.delete(header, undefined, undefined, undefined, undefined, 'Foreground').catch((err: unknown) => {
        if (!isKubeStatus(err, 404)) throw err;
      });
    }
    for (;;) {
      const gone = await api.read(header).then(
        () => false,
        (err: unknown) => isKubeStatus(err, 404),
      );
      if (gone) break;
      if (opts.requeue) return waiting(`Job ${o.name} is being replaced (its template changed)`, opts.pollMs ?? 2_000);
      await sleep(opts.pollMs ?? 500, undefined, { signal: opts.signal });
    }
  }
  const made = await api.create(want, undefined, undefined, opts.fieldManager ?? 'kupenstack');
  return { done: made.metadata!.uid! };
}

type GateLook = { failure: Omit<StepFailure, 'step'> } | { waiting: [RenderedObject, Verdict & { state: 'waiting' }] } | { ready: true };

/**
 * A step's gate: looks until every workload is ready, one failed, or the deadline passed. In
 * requeue mode one look, then a Progress; the deadline counts from the first look of this rollout.
 */
async function gate(step: Step, label: string, opts: CloudApplyOptions, clients: Clients, rollout: RolloutMemory): Promise<StepEnd> {
  const deadlineMs = opts.stepDeadlineMs ?? 1_200_000;
  const since = rollout.gateSince.get(label) ?? Date.now();
  rollout.gateSince.set(label, since);
  const pending = new Set(step.objects.filter((o) => ['Deployment', 'StatefulSet', 'DaemonSet', 'Job'].includes(o.kind)));
  for (;;) {
    const seen = await lookAtGate(pending, opts.namespace, clients, rollout.jobs);
    if ('ready' in seen) return undefined;
    if ('failure' in seen) return { failure: { ...seen.failure, step: label } };
    const [o, v] = seen.waiting;
    if (Date.now() > since + deadlineMs) {
      return { failure: { step: label, kind: o.kind, name: o.name, reason: `not ready after ${Math.round(deadlineMs / 1000)} s: ${v.reason}` } };
    }
    // Looked at again after half the time waited so far, from 1 s up to pollMs (10 s): a quick gate passes quickly, a long one costs few passes.
    const again = Math.min(opts.pollMs ?? 10_000, Math.max(1_000, Math.round((Date.now() - since) / 2)));
    if (opts.requeue) return waiting(`step ${label}: ${o.kind}/${o.name}: ${v.reason}`, again);
    await sleep(opts.pollMs ?? 1000, undefined, { signal: opts.signal });
  }
}

/** One look at a gate's pending workloads: the ready ones leave `pending`; the first failed or waiting one is returned. */
async function lookAtGate(pending: Set<RenderedObject>, namespace: string, { api, core }: Clients, created: Map<string, string>): Promise<GateLook> {
  let waiting: [RenderedObject, Verdict & { state: 'waiting' }] | undefined;
  for (const o of [...pending]) {
    type Workload = Parameters<typeof rolloutVerdict>[0];
    const live = await api.read<Workload>({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace } });
    let v = rolloutVerdict(live, o.kind === 'Job' ? created.get(o.name) : undefined);
    type PodSpec = { template?: { spec?: { containers?: { name: string; image: string }[] } } };
    if (v.state === 'ready') v = await imagesVerdict(core, namespace, live, (o.object.spec as PodSpec).template?.spec?.containers ?? []);
    if (v.state === 'failed') {
      const detail = o.kind === 'Job' ? await jobFailureDetail(core, namespace, o.name) : {};
      return { failure: { kind: o.kind, name: o.name, reason: v.reason, ...detail } };
    }
    if (v.state === 'ready') pending.delete(o);
    else waiting ??= [o, v];
  }
  return waiting ? { waiting } : { ready: true };
}
