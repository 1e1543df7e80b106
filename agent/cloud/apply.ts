import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { NotYet } from '../../lib/not-yet.ts';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import { imagesVerdict, jobFailureDetail, rolloutVerdict, type Verdict } from './gates.ts';
import { describeStep, type Step } from './phases.ts';
import type { CloudProgress } from './progress.ts';
import type { RenderedObject } from './render.ts';

/**
 * Runs the steps of a cloud in order against the cluster: server-side apply with the
 * agent's field manager (no Helm release Secrets), Jobs replaced — deleted and created —
 * when their rendered template changed (a Job's pod template is immutable) and kept when
 * it did not (a completed db-sync is not rerun), then each gate until ready or the step's
 * deadline. On the first failure it stops: later steps are not touched, and the failure
 * names the object, the reason, the pod's exit code and the tail of its log. With `requeue`
 * (the controller) a gate not met yet is looked at once and NotYet is thrown, so no worker
 * is held while a chart rolls out; without (standalone) the same look is repeated until done.
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
  /** Progress by requeue: one look per gate, NotYet while it is not met; its memory of the rollout. */
  requeue?: CloudProgress;
  log?: (line: string) => void;
  signal?: AbortSignal;
  /** A step started, or its gate passed (the in-cluster controller records them as Events). */
  onStep?: (step: string, event: 'started' | 'gate passed') => void;
  /**
   * Asked before each object is written; throws to stop the run there. The controller checks its
   * leadership here: a replica paused mid-step must not go on applying the step's objects on resume.
   */
  beforeWrite?: () => void;
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

export interface CloudApplyResult {
  done: string[];
  failure?: StepFailure;
}

export const TEMPLATE_HASH = 'kupenstack.io/template-hash';

export async function applySteps(steps: readonly Step[], opts: CloudApplyOptions): Promise<CloudApplyResult> {
  const api = KubernetesObjectApi.makeApiClient(opts.kubeConfig);
  const core = opts.kubeConfig.makeApiClient(CoreV1Api);
  const log = opts.log ?? (() => undefined);
  const done: string[] = [];
  const created = opts.requeue?.jobs ?? new Map<string, string>(); // Job name → uid of the Job this apply created or kept
  for (const step of steps) {
    const whole = describeStep(step);
    const label = whole.split(' ').slice(0, 2).join(' ');
    // An earlier pass of this rollout finished it (requeue mode).
    if (opts.requeue?.done.has(whole)) {
      done.push(label);
      continue;
    }
    log(`cloud step ${label}: ${step.objects.length} objects`);
    opts.onStep?.(label, 'started');
    try {
      if (step.kind === 'gate') {
        const failure = await gate(step, label, opts, api, core, created);
        if (failure) return { done, failure: { ...failure, step: label } };
      } else {
        for (const o of step.objects) {
          opts.beforeWrite?.();
          try {
            if (o.kind === 'Job') created.set(o.name, await ensureJob(api, o, opts));
            else await api.patch(desired(o, opts), undefined, undefined, opts.fieldManager ?? 'kupenstack', true, PatchStrategy.ServerSideApply);
          } catch (err) {
            // A call cut by the run's stop (leadership lost mid-call: `fetch failed`) is the stop, not this object's failure;
            // nor is a Job still being replaced in requeue mode (its Foreground delete waits for its pods): look again later.
            if (opts.signal?.aborted || err instanceof NotYet) throw err;
            const e = kubeApiError(`apply ${o.kind}/${o.name} of chart ${o.chart}${o.template ? ` (${o.template})` : ''}`, err);
            return { done, failure: { step: label, kind: o.kind, name: o.name, reason: e.message } };
          }
        }
        if (step.kind === 'hooks') {
          const failure = await gate(step, label, opts, api, core, created);
          if (failure) return { done, failure: { ...failure, step: label } };
        }
      }
    } catch (err) {
      // A run stopped from outside (leadership lost, the CR deleted) is not this step's failure; nor is a gate to look at again.
      if (opts.signal?.aborted || err instanceof NotYet) throw err;
      return { done, failure: { step: label, kind: 'step', name: label, reason: (err as Error).message } };
    }
    done.push(label);
    opts.requeue?.gateSince.delete(label);
    opts.requeue?.done.add(whole);
    if (step.kind !== 'apply') opts.onStep?.(label, 'gate passed');
  }
  return { done };
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

/** A Job as rendered: kept when the live one has the same template hash, else replaced. Returns its uid. */
async function ensureJob(api: KubernetesObjectApi, o: RenderedObject, opts: CloudApplyOptions): Promise<string> {
  const want = desired(o, opts);
  const hash = jobTemplateHash(o);
  want.metadata!.annotations = { ...want.metadata!.annotations, [TEMPLATE_HASH]: hash };
  const header = { apiVersion: want.apiVersion!, kind: want.kind!, metadata: { name: want.metadata!.name!, namespace: opts.namespace } };
  const live = await api.read(header).catch((err: unknown) => {
    if (isKubeStatus(err, 404)) return undefined;
    throw err;
  });
  if (live?.metadata?.annotations?.[TEMPLATE_HASH] === hash) return live.metadata.uid!;
  if (live) {
    // A pass in requeue mode may find the Job it asked to delete still going: asked once, not again.
    if (!live.metadata?.deletionTimestamp) {
      opts.log?.(`cloud job ${o.name}: template changed, replacing`);
      await api.delete(header, undefined, undefined, undefined, undefined, 'Foreground').catch((err: unknown) => {
        if (!isKubeStatus(err, 404)) throw err;
      });
    }
    for (;;) {
      const gone = await api.read(header).then(() => false, (err: unknown) => isKubeStatus(err, 404));
      if (gone) break;
      if (opts.requeue) throw new NotYet(`Job ${o.name} is being replaced (its template changed)`, opts.pollMs ?? 2_000);
      await sleep(opts.pollMs ?? 500, undefined, { signal: opts.signal });
    }
  }
  const made = await api.create(want, undefined, undefined, opts.fieldManager ?? 'kupenstack');
  return made.metadata!.uid!;
}

type GateLook = { failure: Omit<StepFailure, 'step'> } | { waiting: [RenderedObject, Verdict & { state: 'waiting' }] } | { ready: true };

/**
 * A step's gate: looks until every workload is ready, one failed, or the deadline passed. In
 * requeue mode one look, then NotYet; the deadline counts from the first look of this rollout.
 */
async function gate(step: Step, label: string, opts: CloudApplyOptions, api: KubernetesObjectApi, core: CoreV1Api, created: Map<string, string>): Promise<Omit<StepFailure, 'step'> | undefined> {
  const deadlineMs = opts.stepDeadlineMs ?? 1_200_000;
  const since = opts.requeue?.gateSince.get(label) ?? Date.now();
  opts.requeue?.gateSince.set(label, since);
  const pending = new Set(step.objects.filter((o) => ['Deployment', 'StatefulSet', 'DaemonSet', 'Job'].includes(o.kind)));
  for (;;) {
    const seen = await lookAtGate(pending, opts.namespace, api, core, created);
    if ('ready' in seen) return undefined;
    if ('failure' in seen) return seen.failure;
    const [o, v] = seen.waiting;
    if (Date.now() > since + deadlineMs) {
      return { kind: o.kind, name: o.name, reason: `not ready after ${Math.round(deadlineMs / 1000)} s: ${v.reason}` };
    }
    // Looked at again after half the time waited so far, from 1 s up to pollMs (10 s): a quick gate passes quickly, a long one costs few passes.
    const again = Math.min(opts.pollMs ?? 10_000, Math.max(1_000, Math.round((Date.now() - since) / 2)));
    if (opts.requeue) throw new NotYet(`step ${label}: ${o.kind}/${o.name}: ${v.reason}`, again);
    await sleep(opts.pollMs ?? 1000, undefined, { signal: opts.signal });
  }
}

/** One look at a gate's pending workloads: the ready ones leave `pending`; the first failed or waiting one is returned. */
async function lookAtGate(pending: Set<RenderedObject>, namespace: string, api: KubernetesObjectApi, core: CoreV1Api, created: Map<string, string>): Promise<GateLook> {
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
