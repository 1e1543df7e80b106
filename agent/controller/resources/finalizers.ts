import type * as k8s from '@kubernetes/client-node';
import { group, version } from '../../schema/registry.ts';
import { mergePatch } from '../../kube/client.ts';
import { isKubeStatus } from '../../kube/errors.ts';
import { pool } from '../../util/concurrency.ts';
import type { KubeObject } from './objects.ts';

/**
 * Adds or removes one finalizer with a merge patch that carries the
 * resourceVersion it was computed from: a concurrent change makes it fail
 * with 409 (the next reconcile sees the new object) instead of overwriting
 * someone else's finalizer. A 404 means the object is already gone.
 */
export async function setFinalizer(api: k8s.CustomObjectsApi, plural: string, o: KubeObject, name: string, present: boolean): Promise<KubeObject | undefined> {
  const current = o.metadata.finalizers ?? [];
  if (current.includes(name) === present) return o;
  const finalizers = present ? [...current, name] : current.filter((f) => f !== name);
  try {
    return (await api.patchNamespacedCustomObject(
      {
        group,
        version,
        namespace: o.metadata.namespace!,
        plural,
        name: o.metadata.name,
        body: { metadata: { finalizers, resourceVersion: o.metadata.resourceVersion } },
      },
      mergePatch,
    )) as KubeObject;
  } catch (err) {
    if (isKubeStatus(err, 404)) return undefined;
    throw err;
  }
}

/** The finalizers of a run, set while the run observes and plans (finalizeBeforeWrites). */
export interface Finalizing {
  /** Settles (never rejects) once every object has the finalizer: `stopped` when the replica stopped acting for the namespace meanwhile. */
  done: Promise<'set' | 'stopped' | { error: unknown }>;
  /** Objects Kubernetes no longer had when their finalizer was set (deleted meanwhile), once `done`. */
  gone: string[];
}

/** Finalizer patches in flight at once: 300 one after the other held a first apply's writes for 3.7 s. */
export const finalizerPatchesInFlight = 16;

/**
 * Sets `name` on every object of the run not being deleted, a few patches at a time, without
 * holding the run up: the controller reads and plans meanwhile and waits for `done` before its
 * first write to OpenStack or to a status (ORC's rule stays: nothing exists in OpenStack for an
 * object without the finalizer). An object gone from Kubernetes leaves `entries`, as before.
 */
export function finalizeBeforeWrites(
  api: k8s.CustomObjectsApi,
  entries: Map<string, { kind: { plural: string }; object: KubeObject }>,
  name: string,
  isDeleting: (o: KubeObject) => boolean,
  acting: () => boolean,
): Finalizing {
  const gone: string[] = [];
  const missing = [...entries].filter(([, e]) => !isDeleting(e.object) && !(e.object.metadata.finalizers ?? []).includes(name));
  let stopped = false;
  const setAll = async (): Promise<'set' | 'stopped'> => {
    await pool(missing, finalizerPatchesInFlight, async ([address, entry]) => {
      if (stopped || !acting()) {
        stopped = true;
        return;
      }
      const updated = await setFinalizer(api, entry.kind.plural, entry.object, name, true);
      if (updated) entry.object = { ...updated };
      else {
        entries.delete(address);
        gone.push(address);
      }
    });
    return stopped ? 'stopped' : 'set';
  };
  const done = setAll().catch((error: unknown) => ({ error }));
  return { done, gone };
}
