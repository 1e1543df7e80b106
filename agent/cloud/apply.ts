import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import { imagesVerdict, jobFailureDetail, rolloutVerdict, type Verdict } from './gates.ts';
import { describeStep, type Step } from './phases.ts';
import type { RenderedObject } from './render.ts';

/**
 * Runs the steps of a cloud in order against the cluster: server-side apply with the
 * agent's field manager (no Helm release Secrets), Jobs replaced — deleted and created —
 * when their rendered template changed (a Job's pod template is immutable) and kept when
 * it did not (a completed db-sync is not rerun), then each gate until ready or the step's
 * deadline. On the first failure it stops: later steps are not touched, and the failure
 * names the object, the reason, the pod's exit code and the tail of its log.
 */
export interface CloudApplyOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** OpenStackCloud name: label kupenstack.io/cloud on every object. */
  cloud: string;
  fieldManager?: string;
  /** Per step, default 1200 s (Rockoon's wait_application_ready_timeout). */
  stepDeadlineMs?: number;
  pollMs?: number;
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
  const created = new Map<string, string>(); // Job name → uid of the Job this apply created or kept
  for (const step of steps) {
    const label = describeStep(step).split(' ').slice(0, 2).join(' ');
    log(`cloud step ${label}: ${step.objects.length} objects`);
    opts.onStep?.(label, 'started');
    try {
      if (step.kind === 'gate') {
        const failure = await gate(step, opts, api, core, created);
        if (failure) return { done, failure: { ...failure, step: label } };
      } else {
        for (const o of step.objects) {
          opts.beforeWrite?.();
          try {
            if (o.kind === 'Job') created.set(o.name, await ensureJob(api, o, opts));
            else await api.patch(desired(o, opts), undefined, undefined, opts.fieldManager ?? 'kupenstack', true, PatchStrategy.ServerSideApply);
          } catch (err) {
            const e = kubeApiError(`apply ${o.kind}/${o.name} of chart ${o.chart}${o.template ? ` (${o.template})` : ''}`, err);
            return { done, failure: { step: label, kind: o.kind, name: o.name, reason: e.message } };
          }
        }
        if (step.kind === 'hooks') {
          const failure = await gate(step, opts, api, core, created);
          if (failure) return { done, failure: { ...failure, step: label } };
        }
      }
    } catch (err) {
      // A run stopped from outside (leadership lost, the CR deleted) is not this step's failure.
      if (opts.signal?.aborted) throw err;
      return { done, failure: { step: label, kind: 'step', name: label, reason: (err as Error).message } };
    }
    done.push(label);
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
    opts.log?.(`cloud job ${o.name}: template changed, replacing`);
    await api.delete(header, undefined, undefined, undefined, undefined, 'Foreground');
    for (;;) {
      const gone = await api.read(header).then(() => false, (err: unknown) => isKubeStatus(err, 404));
      if (gone) break;
      await sleep(opts.pollMs ?? 500, undefined, { signal: opts.signal });
    }
  }
  const made = await api.create(want, undefined, undefined, opts.fieldManager ?? 'kupenstack');
  return made.metadata!.uid!;
}

async function gate(step: Step, opts: CloudApplyOptions, api: KubernetesObjectApi, core: CoreV1Api, created: Map<string, string>): Promise<Omit<StepFailure, 'step'> | undefined> {
  const deadline = Date.now() + (opts.stepDeadlineMs ?? 1_200_000);
  const pending = new Set(step.objects.filter((o) => ['Deployment', 'StatefulSet', 'DaemonSet', 'Job'].includes(o.kind)));
  while (pending.size > 0) {
    const last = new Map<RenderedObject, Verdict>();
    for (const o of [...pending]) {
      const live = await api.read<Parameters<typeof rolloutVerdict>[0]>({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace: opts.namespace } });
      let v = rolloutVerdict(live, o.kind === 'Job' ? created.get(o.name) : undefined);
      if (v.state === 'ready') v = await imagesVerdict(core, opts.namespace, live, ((o.object.spec as { template?: { spec?: { containers?: { name: string; image: string }[] } } }).template?.spec?.containers ?? []));
      if (v.state === 'failed') {
        const detail = o.kind === 'Job' ? await jobFailureDetail(core, opts.namespace, o.name) : {};
        return { kind: o.kind, name: o.name, reason: v.reason, ...detail };
      }
      if (v.state === 'ready') pending.delete(o);
      else last.set(o, v);
    }
    if (pending.size === 0) break;
    if (Date.now() > deadline) {
      const [o, v] = [...last][0]!;
      return { kind: o.kind, name: o.name, reason: `not ready after ${Math.round((opts.stepDeadlineMs ?? 1_200_000) / 1000)} s: ${(v as { reason: string }).reason}` };
    }
    await sleep(opts.pollMs ?? 1000, undefined, { signal: opts.signal });
  }
  return undefined;
}
