import { createHash } from 'node:crypto';
import type { SourceDocument } from '../../model/manifest.ts';
import { apiVersion } from '../../schema/registry.ts';
import type { KubeObject } from './objects.ts';
import { addressOfObject, isDeleting } from './objects.ts';

/**
 * A namespace's custom resources as the documents of one revision, so they
 * pass the same validation as files from Git. The "file" of each document is
 * the object's address (`team-a/Subnet/app`): a message names the object as
 * the user knows it; there is no line to point at.
 */
export function documentsOf(objects: { kind: string; object: KubeObject }[]): SourceDocument[] {
  return objects
    .filter(({ object }) => !isDeleting(object))
    .map(({ kind, object }, index) => ({
      file: addressOfObject(kind, object),
      index,
      value: manifestOf(kind, object),
      position: () => ({ line: 0, column: 0 }),
    }));
}

/** What a manifest file would hold: server-set metadata and status are not part of the desired state. */
function manifestOf(kind: string, o: KubeObject): Record<string, unknown> {
  // A cluster-scoped object (OpenStackCloud) has no namespace key at all: even an undefined one is "namespace set" to the validator.
  const metadata: Record<string, unknown> = { name: o.metadata.name, ...(o.metadata.namespace !== undefined ? { namespace: o.metadata.namespace } : {}) };
  if (o.metadata.labels) metadata.labels = o.metadata.labels;
  const annotations = Object.fromEntries(
    Object.entries(o.metadata.annotations ?? {}).filter(([k]) => k !== 'kubectl.kubernetes.io/last-applied-configuration'),
  );
  if (Object.keys(annotations).length) metadata.annotations = annotations;
  return { apiVersion, kind, metadata, spec: o.spec ?? {} };
}

/**
 * `k8s:<namespace>@<digest>`: a digest of every object's uid, generation and
 * deletion, so it moves with any spec change, creation or deletion, but not
 * with status writes. (The highest resourceVersion would move with the
 * controller's own status writes, and a Ready message naming the revision
 * would then be rewritten on every resync, forever.)
 */
export function revisionOf(namespace: string, objects: KubeObject[]): string {
  const parts = objects.map((o) => `${o.metadata.uid ?? o.metadata.name}:${o.metadata.generation ?? 0}:${isDeleting(o) ? 'd' : ''}`).sort();
  return `k8s:${namespace}@${createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 12)}`;
}
