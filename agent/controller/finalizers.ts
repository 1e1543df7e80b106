import type * as k8s from '@kubernetes/client-node';
import { group, version } from '../schema/registry.ts';
import { mergePatch } from '../kube/client.ts';
import { isKubeStatus } from '../kube/errors.ts';
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
      { group, version, namespace: o.metadata.namespace!, plural, name: o.metadata.name, body: { metadata: { finalizers, resourceVersion: o.metadata.resourceVersion } } },
      mergePatch,
    )) as KubeObject;
  } catch (err) {
    if (isKubeStatus(err, 404)) return undefined;
    throw err;
  }
}
