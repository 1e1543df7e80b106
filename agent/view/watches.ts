import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version } from '../schema/registry.ts';
import type { ChangeEvent } from './api.ts';
import { viewErrorOf } from './view-error.ts';

/** One collection to watch: a kind (in a namespace or cluster-wide, maybe one name or a label) or the Events of KupenStack objects. */
export interface WatchTarget {
  /** A KupenStack plural, or `events`. */
  plural: string;
  /** The kind named in change events. */
  kind: string;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

function pathOf(t: WatchTarget): string {
  if (t.plural === 'events') return `/api/v1/namespaces/${t.namespace ?? 'default'}/events`;
  return `/apis/${group}/${version}/${t.namespace ? `namespaces/${t.namespace}/` : ''}${t.plural}`;
}

function selectorsOf(t: WatchTarget): { labelSelector?: string; fieldSelector?: string } {
  const field = t.plural === 'events' ? [`involvedObject.apiVersion=${apiVersion}`, ...(t.fieldSelector ? [t.fieldSelector] : [])].join(',') : t.fieldSelector;
  return { ...(t.labelSelector ? { labelSelector: t.labelSelector } : {}), ...(field ? { fieldSelector: field } : {}) };
}

/**
 * The list's resourceVersion, read with the person's client: where the
 * watch starts (no burst of ADDED for what the page already shows), and the
 * authorisation check (a 403 here is the scope's `denied`).
 */
async function startingPoint(kc: k8s.KubeConfig, t: WatchTarget): Promise<string> {
  const sel = { ...selectorsOf(t), limit: 1 };
  try {
    if (t.plural === 'events') {
      const list = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: t.namespace ?? 'default', ...sel });
      return list.metadata?.resourceVersion ?? '';
    }
    const api = kc.makeApiClient(k8s.CustomObjectsApi);
    const list = (
      t.namespace
        ? await api.listNamespacedCustomObject({ group, version, namespace: t.namespace, plural: t.plural, ...sel })
        : await api.listClusterCustomObject({ group, version, plural: t.plural, ...sel })
    ) as { metadata?: { resourceVersion?: string } };
    return list.metadata?.resourceVersion ?? '';
  } catch (err) {
    throw viewErrorOf(`watch ${t.plural}${t.namespace ? ` in namespace ${t.namespace}` : ''}`, err);
  }
}

interface WatchedObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  involvedObject?: { kind?: string; name?: string; namespace?: string };
}

/**
 * Watches one target with the person's client until `signal` aborts,
 * calling `change` for each change (an Event's change names the object it is
 * about). A watch the API server ends is started again from a fresh list,
 * and a `resync` change tells the page to read again what it may have missed.
 * Throws the ViewError of the first list (403: the person may not watch it).
 */
export async function watchTarget(kc: k8s.KubeConfig, t: WatchTarget, scope: string, change: (e: ChangeEvent) => void, signal: AbortSignal): Promise<void> {
  let rv = await startingPoint(kc, t);
  const w = new k8s.Watch(kc);
  const run = async (): Promise<void> => {
    if (signal.aborted) return;
    const ctl = await w.watch(
      pathOf(t),
      { ...selectorsOf(t), resourceVersion: rv, allowWatchBookmarks: true },
      (phase: string, obj: WatchedObject) => {
        if (obj.metadata?.resourceVersion) rv = obj.metadata.resourceVersion;
        if (phase !== 'ADDED' && phase !== 'MODIFIED' && phase !== 'DELETED') return;
        const about = t.plural === 'events' ? obj.involvedObject : obj.metadata;
        const kind = t.plural === 'events' ? (obj.involvedObject?.kind ?? 'Event') : t.kind;
        change({
          scope,
          type: phase,
          kind,
          ...(about?.namespace ? { namespace: about.namespace } : {}),
          name: about?.name ?? '',
          ...(rv ? { resourceVersion: rv } : {}),
        });
      },
      () => {
        if (signal.aborted) return;
        // Ended by the API server (timeout, 410 Gone, a dropped connection): list again, and tell the page.
        setTimeout(() => {
          startingPoint(kc, t)
            .then((fresh) => {
              rv = fresh;
              change({ scope, type: 'MODIFIED', kind: t.kind, ...(t.namespace ? { namespace: t.namespace } : {}), name: '' });
              return run();
            })
            .catch(() => undefined);
        }, 1_000);
      },
    );
    signal.addEventListener('abort', () => ctl.abort(), { once: true });
  };
  await run();
}
