import type * as k8s from '@kubernetes/client-node';
import { formatDiagnostic, type Diagnostic } from '../../diagnostic.ts';
import { kubeApiError, isKubeStatus, type KubeApiError } from '../../kube/errors.ts';
import { serverSideApply } from '../../kube/client.ts';
import type { Manifest } from '../../model/manifest.ts';
import type { SchemaRegistry } from '../../schema/registry.ts';
import { describeEntry, inventoryKey, syncLabel, type InventoryEntry } from './inventory.ts';

/** One manifest of the revision as the object server-side apply sends, and where it came from. */
export interface DesiredObject {
  entry: InventoryEntry;
  plural: string;
  body: Record<string, unknown>;
  /** The manifest, for diagnostics naming its file and line (as the repository names the file). */
  manifest: Manifest;
  file: string;
}

/**
 * The revision's manifests as custom resources: what the user wrote
 * (apiVersion, kind, metadata name/namespace/labels/annotations, spec), the
 * Sync's label added; never a status (that is the resource loop's).
 */
export function desiredObjects(manifests: Manifest[], registry: SchemaRegistry, sync: string, fileOf: (m: Manifest) => string): DesiredObject[] {
  return manifests.map((m) => {
    const info = registry.kinds.get(m.kind)!;
    const raw = m.source.value as { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec?: unknown };
    const metadata: Record<string, unknown> = { name: m.metadata.name, labels: { ...(raw.metadata?.labels ?? {}), [syncLabel]: sync } };
    if (info.scope === 'Namespaced') metadata.namespace = m.metadata.namespace;
    if (raw.metadata?.annotations) metadata.annotations = raw.metadata.annotations;
    const entry: InventoryEntry = {
      apiVersion: m.apiVersion,
      kind: m.kind,
      name: m.metadata.name,
      ...(info.scope === 'Namespaced' ? { namespace: m.metadata.namespace } : {}),
    };
    return {
      entry,
      plural: info.plural,
      body: { apiVersion: m.apiVersion, kind: m.kind, metadata, ...(raw.spec !== undefined ? { spec: raw.spec } : {}) },
      manifest: m,
      file: fileOf(m),
    };
  });
}

/** The API server said no to this object (RBAC, a missing namespace, admission): the revision is at fault, not the network. */
function refusal(err: KubeApiError): boolean {
  return err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
}

export interface DryRunResult {
  /** `file:line:col: …` per refused object, the API server's message in it. */
  refused: string[];
  /** A failure that says nothing about the revision (API server unreachable, 5xx): retry. */
  transient?: KubeApiError;
}

/**
 * Every object server-side applied with dryRun=All, as the Sync's identity:
 * admission, RBAC and the CRD schema answer for the whole revision before
 * anything of it is written (Flux's all-or-nothing). Objects are tried one
 * after another, so every refused file is named, not only the first.
 */
export async function dryRunApply(api: k8s.CustomObjectsApi, objects: DesiredObject[], fieldManager: string, signal?: AbortSignal): Promise<DryRunResult> {
  const refused: string[] = [];
  for (const o of objects) {
    if (signal?.aborted) return { refused, transient: kubeApiError('dry-run', signal.reason) };
    try {
      await applyOne(api, o, fieldManager, true);
    } catch (cause) {
      const err = kubeApiError(`${describeEntry(o.entry)}`, cause);
      if (!refusal(err)) return { refused, transient: err };
      refused.push(formatDiagnostic(diagnosticFor(o, err)));
    }
  }
  return { refused };
}

/** The refused object's diagnostic: at its namespace when RBAC or a missing namespace is the cause, else at its name. */
function diagnosticFor(o: DesiredObject, err: KubeApiError): Diagnostic {
  const atNamespace = o.entry.namespace !== undefined && (err.status === 403 || err.status === 404);
  const path = atNamespace ? ['metadata', 'namespace'] : ['metadata', 'name'];
  const pos = o.manifest.source.position(path);
  return {
    code: `kubernetes.${err.reason.toLowerCase()}`,
    file: o.file,
    line: pos.line,
    column: pos.column,
    kind: o.entry.kind,
    name: o.entry.name,
    path: path.join('.'),
    message: err.message.replace(/^[^:]*: /, ''),
  };
}

export async function applyOne(api: k8s.CustomObjectsApi, o: DesiredObject, fieldManager: string, dryRun: boolean): Promise<void> {
  const [group, version] = o.entry.apiVersion.split('/') as [string, string];
  // force: a field another manager (a kubectl edit) took is taken back; fields only others set stay theirs.
  const common = { group, version, plural: o.plural, name: o.entry.name, body: o.body, fieldManager, force: true, ...(dryRun ? { dryRun: 'All' } : {}) };
  if (o.entry.namespace) await api.patchNamespacedCustomObject({ ...common, namespace: o.entry.namespace }, serverSideApply);
  else await api.patchClusterCustomObject(common, serverSideApply);
}

export interface PruneResult {
  deleted: InventoryEntry[];
  /** Left alone: no longer labelled for this Sync (someone took it over) or already gone. */
  released: InventoryEntry[];
  failed: { entry: InventoryEntry; error: KubeApiError }[];
}

/** Deletes what the last inventory had and the revision no longer declares, as the Sync's identity; only objects still carrying the Sync's label. */
export async function pruneObjects(api: k8s.CustomObjectsApi, gone: InventoryEntry[], registry: SchemaRegistry, sync: string): Promise<PruneResult> {
  const out: PruneResult = { deleted: [], released: [], failed: [] };
  for (const e of gone) {
    const info = registry.kinds.get(e.kind);
    const [group, version] = e.apiVersion.split('/') as [string, string];
    if (!info) {
      out.released.push(e);
      continue;
    }
    const ref = { group, version, plural: info.plural, name: e.name };
    try {
      const current = (e.namespace ? await api.getNamespacedCustomObject({ ...ref, namespace: e.namespace }) : await api.getClusterCustomObject(ref)) as {
        metadata?: { labels?: Record<string, string> };
      };
      if (current.metadata?.labels?.[syncLabel] !== sync) {
        out.released.push(e);
        continue;
      }
      if (e.namespace) await api.deleteNamespacedCustomObject({ ...ref, namespace: e.namespace });
      else await api.deleteClusterCustomObject(ref);
      out.deleted.push(e);
    } catch (cause) {
      if (isKubeStatus(cause, 404)) out.released.push(e);
      else out.failed.push({ entry: e, error: kubeApiError(`delete ${describeEntry(e)}`, cause) });
    }
  }
  return out;
}

export function difference(previous: InventoryEntry[], next: InventoryEntry[]): InventoryEntry[] {
  const keep = new Set(next.map(inventoryKey));
  return previous.filter((e) => !keep.has(inventoryKey(e)));
}
