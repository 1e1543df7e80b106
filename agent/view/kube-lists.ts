import * as k8s from '@kubernetes/client-node';
import { group, version, apiVersion, type SchemaRegistry } from '../schema/registry.ts';
import type { ObjectEvent } from './api.ts';
import { iso, type KubeObject } from './shape.ts';
import { may } from './user-client.ts';
import { ViewError, viewErrorOf } from './view-error.ts';

/**
 * The reads behind the view, each made with the client it is handed (the
 * person's, user-client.ts): lists of one kind, the Events of KupenStack
 * objects, and which namespaces the person may read.
 */

export async function listKind(kc: k8s.KubeConfig, plural: string, namespace?: string): Promise<KubeObject[]> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    const list = (
      namespace ? await api.listNamespacedCustomObject({ group, version, namespace, plural }) : await api.listClusterCustomObject({ group, version, plural })
    ) as { items: KubeObject[] };
    return list.items;
  } catch (err) {
    throw viewErrorOf(`list ${plural}${namespace ? ` in namespace ${namespace}` : ''}`, err);
  }
}

export async function getObject(kc: k8s.KubeConfig, plural: string, name: string, namespace?: string): Promise<KubeObject> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    return (
      namespace
        ? await api.getNamespacedCustomObject({ group, version, namespace, plural, name })
        : await api.getClusterCustomObject({ group, version, plural, name })
    ) as KubeObject;
  } catch (err) {
    throw viewErrorOf(`read ${plural} ${namespace ? `${namespace}/` : ''}${name}`, err);
  }
}

function eventTime(e: k8s.CoreV1Event): string {
  return iso(e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp) ?? new Date(0).toISOString();
}

/**
 * The Events the controller recorded on KupenStack objects in a namespace (or
 * on cluster-scoped ones: namespace `default`, where Kubernetes keeps them),
 * newest first; `involved` narrows to one object.
 */
export async function listEvents(kc: k8s.KubeConfig, namespace: string, involved?: { kind: string; name: string }, limit = 100): Promise<ObjectEvent[]> {
  const api = kc.makeApiClient(k8s.CoreV1Api);
  const fields = [
    `involvedObject.apiVersion=${apiVersion}`,
    ...(involved ? [`involvedObject.kind=${involved.kind}`, `involvedObject.name=${involved.name}`] : []),
  ];
  let items: k8s.CoreV1Event[];
  try {
    items = (await api.listNamespacedEvent({ namespace, fieldSelector: fields.join(',') })).items;
  } catch (err) {
    throw viewErrorOf(`list Events in namespace ${namespace}`, err);
  }
  return items
    .map((e) => ({
      type: e.type ?? '',
      reason: e.reason ?? '',
      message: (e.message ?? '').replace(/\s+/g, ' '),
      count: e.count ?? e.series?.count ?? 1,
      at: eventTime(e),
      object: `${e.involvedObject.kind ?? '?'}/${e.involvedObject.name ?? '?'}`,
    }))
    .sort((a, b) => b.at.localeCompare(a.at))
    .slice(0, limit);
}

/** The Events, or none where the person may not read Events (kupenstack-view grants KupenStack's kinds, not Events). */
export async function eventsIfAllowed(kc: k8s.KubeConfig, namespace: string, involved?: { kind: string; name: string }, limit = 100): Promise<ObjectEvent[]> {
  try {
    return await listEvents(kc, namespace, involved, limit);
  } catch (err) {
    if (err instanceof ViewError && err.status === 403) return [];
    throw err;
  }
}

/** Where namespace names come from when the person may not list namespaces (a tenant): see readableNamespaces. */
export type NamespaceHints = () => Promise<string[]>;

/**
 * The namespaces the person may read KupenStack objects in. One who may
 * list namespaces gets them all, kept where a SelfSubjectAccessReview says
 * they may list the kind; a tenant (who may not list namespaces) gets the
 * hinted names (the controller's opted-in namespaces, and the namespace of
 * their own ServiceAccount), each kept only where their own review allows
 * it. A name is never shown unless the person's own access review says yes.
 */
export async function readableNamespaces(kc: k8s.KubeConfig, registry: SchemaRegistry, hints: NamespaceHints, own?: string): Promise<string[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let names: string[];
  try {
    names = (await core.listNamespace()).items.map((n) => n.metadata?.name ?? '').filter((n) => n !== '');
  } catch {
    names = [...new Set([...(await hints()), ...(own ? [own] : [])])];
  }
  const plural = registry.kinds.get('Network')?.plural ?? 'networks';
  const allowed = await Promise.all(names.map(async (n) => ((await may(kc, 'list', { group, resource: plural, namespace: n })) ? n : undefined)));
  return allowed.filter((n): n is string => n !== undefined).sort();
}

/** `system:serviceaccount:<namespace>:<name>` → namespace. */
export function serviceAccountNamespace(username: string): string | undefined {
  return /^system:serviceaccount:([^:]+):/.exec(username)?.[1];
}
