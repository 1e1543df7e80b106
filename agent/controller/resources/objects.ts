/** A custom resource as the API server returns it: only the fields the controller reads. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string | Date;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** `namespace/Kind/name`, as Manifest.address spells it: the object's name in messages, state and Events. */
export function addressOfObject(kind: string, o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${kind}/${o.metadata.name}`;
}

export const finalizer = 'kupenstack.io/finalizer';

export function isDeleting(o: KubeObject): boolean {
  return o.metadata.deletionTimestamp !== undefined && o.metadata.deletionTimestamp !== null;
}
