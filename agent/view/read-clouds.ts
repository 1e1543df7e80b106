import type * as k8s from '@kubernetes/client-node';
import type { OpenStackCloudStatus } from '../model/kinds.generated.ts';
import type { CloudSummary, CloudView, ObjectEvent, UpgradeStep } from './api.ts';
import { eventsIfAllowed, getObject, listKind } from './kube-lists.ts';
import { conditionsOf, healthOf, type KubeObject } from './shape.ts';

const plural = 'openstackclouds';

function statusOf(o: KubeObject): OpenStackCloudStatus {
  return (o.status ?? {}) as OpenStackCloudStatus;
}

export function cloudSummaryOf(o: KubeObject): CloudSummary {
  const st = statusOf(o);
  const u = st.upgrade;
  const running = u && u.phase !== 'Succeeded' && u.phase !== 'Failed';
  return {
    name: o.metadata.name,
    health: healthOf(conditionsOf(o)),
    ...(st.release ? { release: st.release } : {}),
    ...(running ? { upgrading: `${u.from ?? '?'} → ${u.to ?? '?'}: ${u.phase ?? ''} ${u.step ?? u.service ?? ''}`.trim() } : {}),
  };
}

/**
 * An upgrade's steps with their times, from the Events the cloud loop
 * records (controller/clouds/cloud-loop.ts): `BackupDone`, `StepStarted`
 * ("step <s> started"), `GatePassed` ("gate of step <s> passed") and
 * `StepFailed` ("<s>: why"), oldest first. A step started and not passed is
 * Running while the upgrade runs; the status's own step is added when no
 * Event names it yet.
 */
function upgradeSteps(st: OpenStackCloudStatus, events: ObjectEvent[]): UpgradeStep[] {
  const u = st.upgrade;
  if (!u) return [];
  const since = u.startedAt ?? '';
  const steps = new Map<string, UpgradeStep>();
  const running = u.phase === 'Backup' || u.phase === 'Upgrading';
  for (const e of [...events].filter((x) => x.at >= since).reverse()) {
    let m: RegExpExecArray | null;
    if (e.reason === 'BackupDone') steps.set('backup', { step: 'backup', state: 'Done', finishedAt: e.at, message: e.message });
    else if (e.reason === 'StepStarted' && (m = /^step (.+) started$/.exec(e.message)))
      steps.set(m[1]!, { step: m[1]!, state: running ? 'Running' : 'Waiting', startedAt: e.at });
    else if (e.reason === 'GatePassed' && (m = /^gate of step (.+) passed$/.exec(e.message)))
      steps.set(m[1]!, { ...(steps.get(m[1]!) ?? { step: m[1]! }), state: 'Done', finishedAt: e.at });
    else if (e.reason === 'StepFailed' && (m = /^([^:]+): (.*)$/.exec(e.message)))
      steps.set(m[1]!, { ...(steps.get(m[1]!) ?? { step: m[1]! }), state: 'Failed', finishedAt: e.at, message: m[2]! });
  }
  if (u.phase === 'Backup' && !steps.has('backup'))
    steps.set('backup', { step: 'backup', state: 'Running', ...(u.startedAt ? { startedAt: u.startedAt } : {}) });
  if (running && u.step && !steps.has(u.step)) steps.set(u.step, { step: u.step, state: 'Running' });
  return [...steps.values()];
}

export function cloudViewOf(o: KubeObject, events: ObjectEvent[]): CloudView {
  const st = statusOf(o);
  const conditions = conditionsOf(o);
  return {
    name: o.metadata.name,
    health: healthOf(conditions),
    conditions,
    ...(st.release ? { release: st.release } : {}),
    services: Object.entries(st.services ?? {})
      .map(([name, s]) => ({
        name,
        ready: s.ready === true,
        ...(s.release ? { release: s.release } : {}),
        ...(s.chartVersion ? { chartVersion: s.chartVersion } : {}),
        ...(s.message ? { message: s.message } : {}),
        ...(s.endpoint?.url ? { endpoint: s.endpoint.url } : {}),
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    ...(st.upgrade ? { upgrade: { ...st.upgrade, steps: upgradeSteps(st, events) } } : {}),
    ...(st.lastBackup ? { lastBackup: st.lastBackup } : {}),
    ...(st.failure ? { failure: st.failure } : {}),
    ...(st.nextWindow ? { nextWindow: st.nextWindow } : {}),
    events,
  };
}

export async function cloudSummaries(kc: k8s.KubeConfig): Promise<CloudSummary[]> {
  return (await listKind(kc, plural)).map(cloudSummaryOf);
}

export async function cloudViews(kc: k8s.KubeConfig): Promise<CloudView[]> {
  const clouds = await listKind(kc, plural);
  return Promise.all(clouds.map(async (o) => cloudViewOf(o, await cloudEvents(kc, o.metadata.name))));
}

export async function cloudView(kc: k8s.KubeConfig, name: string): Promise<CloudView> {
  const o = await getObject(kc, plural, name);
  return cloudViewOf(o, await cloudEvents(kc, name));
}

/** The cloud's Events (cluster-scoped: Kubernetes keeps them in `default`). */
function cloudEvents(kc: k8s.KubeConfig, name: string): Promise<ObjectEvent[]> {
  return eventsIfAllowed(kc, 'default', { kind: 'OpenStackCloud', name }, 100);
}
