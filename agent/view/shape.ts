import type { Condition, Diagnostic, Health, ObjectRef, ObjectSummary, Revision } from './api.ts';
import type { SchemaRegistry } from '../schema/registry.ts';

/**
 * Status as the API server holds it, turned into the rows of the view's
 * contract (api.ts): health from the conditions (kstatus), references from
 * the kinds' schemas, a revision and a diagnostic line split into parts.
 * Pure functions: the readers feed them objects read with the person's token.
 */

/** A KupenStack object as the API server returns it (custom objects are untyped JSON). */
export interface KubeObject {
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
    creationTimestamp?: string | Date;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & { conditions?: Condition[]; id?: string; lastSyncTime?: string | Date };
}

/** The one word a row shows: Stalled wins, then Ready, then Reconciling; a False Ready otherwise is Failed. */
export function healthOf(conditions: readonly Condition[] | undefined, suspended = false): Health {
  if (suspended) return 'Suspended';
  const is = (type: string): Condition | undefined => conditions?.find((c) => c.type === type && c.status === 'True');
  const ready = conditions?.find((c) => c.type === 'Ready');
  if (is('Stalled')) return 'Stalled';
  if (ready?.status === 'True') return 'Ready';
  if (is('Reconciling')) return 'Reconciling';
  if (ready?.status === 'False') return ready.reason === 'Progressing' ? 'Reconciling' : 'Failed';
  return 'Unknown';
}

/** client-node hands date-time fields back as Date objects. */
export function iso(v: unknown): string | undefined {
  if (v instanceof Date) return v.toISOString();
  return typeof v === 'string' ? v : undefined;
}

export function conditionsOf(o: KubeObject): Condition[] {
  return (o.status?.conditions ?? []).map((c) => ({ ...c, ...(c.lastTransitionTime ? { lastTransitionTime: iso(c.lastTransitionTime) } : {}) }));
}

/** `main@sha1:<sha>` (Git) or `<tag>@sha256:<digest>` (OCI): the commit or digest part. */
export function revisionOf(revision: string | undefined, when?: string): Revision | undefined {
  if (!revision) return undefined;
  const m = /(?:^|@)(?:sha1|sha256):([0-9a-f]+)$/.exec(revision);
  return { revision, ...(m ? { commit: m[1] } : {}), ...(when ? { when } : {}) };
}

/** `<file>:<line>:<column>: <message>` as status holds a rejected revision's reasons; other lines whole. */
export function diagnosticOf(text: string): Diagnostic {
  const m = /^([^:\s][^:]*):(\d+)(?::(\d+))?: (.*)$/s.exec(text);
  if (!m) return { message: text, text };
  return { file: m[1]!, line: Number(m[2]), ...(m[3] ? { column: Number(m[3]) } : {}), message: m[4]!, text };
}

/** Every `xxxRef: {name}` the object's kind declares in its schema (x-kupenstack-ref), with where it sits. */
export function refsOf(o: KubeObject, kind: string, registry: SchemaRegistry): ObjectRef[] {
  const info = registry.kinds.get(kind);
  if (!info) return [];
  const out: ObjectRef[] = [];
  const walk = (node: unknown, path: readonly string[], at: string, target: string): void => {
    if (path.length === 0) {
      const name = (node as { name?: unknown } | null)?.name;
      if (typeof name === 'string') out.push({ kind: target, ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}), name, field: at });
      return;
    }
    const [seg, ...rest] = path as [string, ...string[]];
    if (seg === '*') {
      if (Array.isArray(node)) node.forEach((item, i) => walk(item, rest, `${at}[${i}]`, target));
    } else if (node !== null && typeof node === 'object' && seg in node) {
      walk((node as Record<string, unknown>)[seg], rest, at ? `${at}.${seg}` : seg, target);
    }
  };
  for (const ref of info.refs) walk(o, ref.path, '', ref.target);
  return out.map((r) => ({ ...r, field: r.field?.replace(/^spec\./, '') ?? '' }));
}

/** Drift the object reports without correcting it: a paused namespace's Ready=False reason Paused, or a Drift condition. */
function driftOf(conditions: readonly Condition[]): string | undefined {
  const c = conditions.find((x) => (x.type === 'Ready' && x.reason === 'Paused') || (x.type === 'Drift' && x.status === 'True'));
  return c?.message;
}

export function summaryOf(o: KubeObject, kind: string, registry: SchemaRegistry): ObjectSummary {
  const conditions = conditionsOf(o);
  const ready = conditions.find((c) => c.type === 'Ready');
  const drift = driftOf(conditions);
  const synced = iso(o.status?.lastSyncTime);
  return {
    kind,
    ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    name: o.metadata.name,
    ...(o.status?.id ? { openstackId: o.status.id } : {}),
    health: healthOf(conditions),
    ...(ready?.reason ? { reason: ready.reason } : {}),
    ...(ready?.message ? { message: ready.message } : {}),
    ...(drift ? { drift } : {}),
    ...(synced ? { lastSyncTime: synced } : {}),
    refs: refsOf(o, kind, registry),
  };
}
