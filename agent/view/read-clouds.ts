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
 * An upgrade's steps with their times: the cloud loop records one Event per
 * step (backup, each chart, Jobs, gates); oldest first, the newest one
 * Running while the upgrade's phase is, Failed when it failed.
 */
function upgradeSteps(st: OpenStackCloudStatus, events: ObjectEvent[]): UpgradeStep[] {
  const u = st.upgrade;
  if (!u) return [];
  const since = u.startedAt ?? '';
  const mine = events.filter((e) => e.at >= since && /upgrade|backup|chart|gate|job/i.test(`${e.reason} ${e.message}`)).reverse();
  const steps: UpgradeStep[] = mine.map((e, i) => ({
    step: e.reason,
    state: 'Done',
    startedAt: e.at,
    ...(mine[i + 1] ? { finishedAt: mine[i + 1]!.at } : {}),
    message: e.message,
  }));
  const last = steps.at(-1);
  if (u.phase === 'Backup' || u.phase === 'Upgrading') {
    if (last && !last.finishedAt) last.state = 'Running';
    else steps.push({ step: u.step ?? u.phase, state: 'Running', ...(u.startedAt ? { startedAt: u.startedAt } : {}) });
  } else if (u.phase === 'Failed' && last) last.state = 'Failed';
  return steps;
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
