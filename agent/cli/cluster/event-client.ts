import * as k8s from '@kubernetes/client-node';
import { kubeApiError } from '../../kube/errors.ts';
import { apiVersion } from '../../schema/registry.ts';
import { age } from './sync-client.ts';

/**
 * What `kupenstack events` reads (Flux's `flux events`): the Events the
 * controller recorded on KupenStack objects (custom resources, Syncs,
 * OpenStackClouds), selected by the API server on the involved object's
 * apiVersion, oldest first as `kubectl events` prints them.
 */
export interface EventRow {
  namespace: string;
  lastSeen: string;
  type: string;
  reason: string;
  /** Kind/name of the object the Event is about. */
  object: string;
  message: string;
  count: number;
  /** When it was last seen (ISO), for sorting and -o json. */
  at: string;
}

function when(e: k8s.CoreV1Event): Date {
  const t = e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp;
  return t ? new Date(t) : new Date(0);
}

export async function listEvents(kc: k8s.KubeConfig, namespace?: string, now = Date.now()): Promise<EventRow[]> {
  const api = kc.makeApiClient(k8s.CoreV1Api);
  const fieldSelector = `involvedObject.apiVersion=${apiVersion}`;
  let items: k8s.CoreV1Event[];
  try {
    items = (namespace ? await api.listNamespacedEvent({ namespace, fieldSelector }) : await api.listEventForAllNamespaces({ fieldSelector })).items;
  } catch (err) {
    throw kubeApiError('list Events', err);
  }
  return items
    .map((e) => ({ e, at: when(e) }))
    .sort((a, b) => a.at.getTime() - b.at.getTime())
    .map(({ e, at }) => ({
      namespace: e.metadata.namespace ?? '',
      lastSeen: age(now - at.getTime()),
      type: e.type ?? '',
      reason: e.reason ?? '',
      object: `${e.involvedObject.kind ?? '?'}/${e.involvedObject.name ?? '?'}`,
      message: (e.message ?? '').replace(/\s+/g, ' '),
      count: e.count ?? e.series?.count ?? 1,
      at: at.toISOString(),
    }));
}
