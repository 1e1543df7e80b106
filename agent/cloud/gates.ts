import type { CoreV1Api, KubernetesObject } from '@kubernetes/client-node';

/**
 * Is one workload done, still going, or failed? `kubectl rollout status` semantics
 * (osh-lifecycle.md §4.4) plus two checks of our own: every pod runs the image the render
 * asked for (not merely "Ready" with an old image), and a Job is the one this step created
 * (a Complete Job of an earlier run does not count).
 */
export type Verdict = { state: 'ready' } | { state: 'waiting'; reason: string } | { state: 'failed'; reason: string; exitCode?: number; pod?: string };

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface Live extends KubernetesObject {
  spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> }; template?: { spec?: { containers?: { name: string; image: string }[] } } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
    conditions?: Condition[];
  };
}

const cond = (o: Live, type: string): Condition | undefined => o.status?.conditions?.find((c) => c.type === type && c.status === 'True');

/** The rollout part: from the object's own status. */
export function rolloutVerdict(o: Live, expectUid?: string): Verdict {
  const gen = o.metadata?.generation ?? 0;
  const st = o.status ?? {};
  const observed = (st.observedGeneration ?? 0) >= gen;
  switch (o.kind) {
    case 'Job': {
      if (expectUid !== undefined && o.metadata?.uid !== expectUid)
        return { state: 'waiting', reason: `Job ${o.metadata?.name} is not the one created in this step` };
      const failed = cond(o, 'Failed') ?? cond(o, 'FailureTarget');
      if (failed) return { state: 'failed', reason: failed.reason ?? 'Failed' };
      return cond(o, 'Complete') ? { state: 'ready' } : { state: 'waiting', reason: 'Job not complete' };
    }
    case 'Deployment': {
      const p = o.status?.conditions?.find((c) => c.type === 'Progressing');
      if (p?.reason === 'ProgressDeadlineExceeded') return { state: 'failed', reason: 'ProgressDeadlineExceeded' };
      const want = o.spec?.replicas ?? 1;
      if (!observed) return { state: 'waiting', reason: 'new generation not observed yet' };
      if ((st.updatedReplicas ?? 0) < want) return { state: 'waiting', reason: `${st.updatedReplicas ?? 0} of ${want} replicas updated` };
      if ((st.replicas ?? 0) > (st.updatedReplicas ?? 0))
        return { state: 'waiting', reason: `${(st.replicas ?? 0) - (st.updatedReplicas ?? 0)} old replicas pending termination` };
      if ((st.availableReplicas ?? 0) < (st.updatedReplicas ?? 0))
        return { state: 'waiting', reason: `${st.availableReplicas ?? 0} of ${st.updatedReplicas ?? 0} updated replicas available` };
      return { state: 'ready' };
    }
    case 'StatefulSet': {
      const want = o.spec?.replicas ?? 1;
      if ((st.observedGeneration ?? 0) === 0 || !observed) return { state: 'waiting', reason: 'new generation not observed yet' };
      if ((st.readyReplicas ?? 0) < want) return { state: 'waiting', reason: `${st.readyReplicas ?? 0} of ${want} pods ready` };
      if (st.updateRevision !== undefined && st.currentRevision !== st.updateRevision && (st.updatedReplicas ?? 0) < want)
        return { state: 'waiting', reason: 'rolling update in progress' };
      return { state: 'ready' };
    }
    case 'DaemonSet': {
      if (!observed) return { state: 'waiting', reason: 'new generation not observed yet' };
      const want = st.desiredNumberScheduled ?? 0;
      if ((st.updatedNumberScheduled ?? 0) < want) return { state: 'waiting', reason: `${st.updatedNumberScheduled ?? 0} of ${want} pods updated` };
      if ((st.numberAvailable ?? 0) < want) return { state: 'waiting', reason: `${st.numberAvailable ?? 0} of ${want} pods available` };
      return { state: 'ready' };
    }
    default:
      return { state: 'ready' };
  }
}

/** The image part: every pod of the workload runs exactly the rendered images. */
export async function imagesVerdict(core: CoreV1Api, namespace: string, o: Live, rendered: { name: string; image: string }[]): Promise<Verdict> {
  const labels = o.spec?.selector?.matchLabels;
  if (!labels || o.kind === 'Job') return { state: 'ready' };
  const selector = Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const pods = await core.listNamespacedPod({ namespace, labelSelector: selector });
  const want = new Map(rendered.map((c) => [c.name, c.image]));
  for (const pod of pods.items) {
    if (pod.metadata?.deletionTimestamp) continue;
    for (const c of pod.status?.containerStatuses ?? []) {
      if (want.has(c.name) && want.get(c.name) !== c.image)
        return { state: 'waiting', reason: `pod ${pod.metadata?.name} runs ${c.image}, the render asks ${want.get(c.name)}` };
    }
  }
  return { state: 'ready' };
}

/** Why a failed Job failed: its last pod's exit code and the tail of its log (when there is one). */
export async function jobFailureDetail(core: CoreV1Api, namespace: string, job: string): Promise<{ pod?: string; exitCode?: number; logTail?: string }> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: `job-name=${job}` });
  const pod = [...pods.items].sort((a, b) => String(a.metadata?.creationTimestamp).localeCompare(String(b.metadata?.creationTimestamp))).at(-1);
  if (!pod) return {};
  const terminated = pod.status?.containerStatuses?.map((c) => c.state?.terminated).find((t) => t !== undefined && t.exitCode !== 0);
  let logTail: string | undefined;
  try {
    const log = await core.readNamespacedPodLog({ name: pod.metadata!.name!, namespace, tailLines: 20 });
    logTail = String(log);
  } catch {
    logTail = terminated?.message; // kwok pods and deleted pods have no log: the termination message is what there is
  }
  return { pod: pod.metadata?.name, exitCode: terminated?.exitCode, logTail };
}
