import { KubernetesObjectApi, PatchStrategy, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import { desired, jobTemplateHash, TEMPLATE_HASH } from './apply.ts';
import type { RenderedChart } from './render-cloud.ts';
import type { RenderedObject } from './render.ts';
import { entryKey, type InventoryEntry } from './store.ts';

/**
 * What applying a render would change in Kubernetes, per chart and object: a server-side
 * apply dry run under the agent's field manager compared with the live object (what the
 * API server would really store, defaults and other managers included), Jobs by their
 * template hash (a changed Job is replaced, not patched), and the inventory for deletions.
 * `diffRenders` is the same without a cluster: two renders compared (`plan --base`).
 */
export interface ImageChange {
  container: string;
  from?: string;
  to?: string;
}

export interface CloudObjectChange {
  chart: string;
  kind: string;
  name: string;
  action: 'create' | 'update' | 'replace' | 'delete';
  /** Field paths that differ (update). */
  fields?: string[];
  images?: ImageChange[];
}

export interface CloudDiffOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  cloud: string;
  fieldManager?: string;
  signal?: AbortSignal;
}

export interface TimedDiff {
  changes: CloudObjectChange[];
  /** Milliseconds of dry-run diff per chart (the bench reports them). */
  millis: Record<string, number>;
}

export async function diffLive(rendered: readonly RenderedChart[], inventory: readonly InventoryEntry[], opts: CloudDiffOptions): Promise<TimedDiff> {
  const api = KubernetesObjectApi.makeApiClient(opts.kubeConfig);
  const changes: CloudObjectChange[] = [];
  const millis: Record<string, number> = {};
  const wanted = new Set<string>();
  for (const chart of rendered) {
    const t0 = performance.now();
    const perChart = await Promise.all(
      chart.objects
        .filter((o) => o.phase.kind !== 'delete')
        .map(async (o): Promise<CloudObjectChange | undefined> => {
          wanted.add(entryKey(o));
          const want = desired(o, opts);
          const header = { apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.name, namespace: opts.namespace } };
          const live = await api.read(header).catch((err: unknown) => {
            if (isKubeStatus(err, 404)) return undefined;
            throw kubeApiError(`read ${o.kind}/${o.name} of chart ${o.chart}`, err);
          });
          const base = { chart: o.chart, kind: o.kind, name: o.name };
          if (!live) return { ...base, action: 'create', images: imageChanges(undefined, want) };
          if (o.kind === 'Job') {
            return live.metadata?.annotations?.[TEMPLATE_HASH] === jobTemplateHash(o)
              ? undefined
              : { ...base, action: 'replace', images: imageChanges(live, want) };
          }
          const dry = await api.patch(want, undefined, 'All', opts.fieldManager ?? 'kupenstack', true, PatchStrategy.ServerSideApply).catch((err: unknown) => {
            throw kubeApiError(`dry-run apply ${o.kind}/${o.name} of chart ${o.chart}`, err);
          });
          const fields = changedPaths(normalise(live), normalise(dry), '');
          return fields.length === 0 ? undefined : { ...base, action: 'update', fields, images: imageChanges(live, dry) };
        }),
    );
    changes.push(...perChart.filter((c): c is CloudObjectChange => c !== undefined));
    millis[chart.chart] = performance.now() - t0;
  }
  for (const e of inventory) if (!wanted.has(entryKey(e))) changes.push({ chart: '', kind: e.kind, name: e.name, action: 'delete' });
  return { changes, millis };
}

/** Two renders compared, without a cluster: what the head would change relative to the base. */
export function diffRenders(base: readonly RenderedChart[], head: readonly RenderedChart[]): CloudObjectChange[] {
  const index = (rs: readonly RenderedChart[]): Map<string, RenderedObject> =>
    new Map(rs.flatMap((c) => c.objects.filter((o) => o.phase.kind !== 'delete').map((o) => [entryKey(o), o] as const)));
  const before = index(base);
  const after = index(head);
  const out: CloudObjectChange[] = [];
  for (const [key, o] of after) {
    const old = before.get(key);
    const b = { chart: o.chart, kind: o.kind, name: o.name };
    if (!old) out.push({ ...b, action: 'create', images: imageChanges(undefined, o.object) });
    else if (JSON.stringify(old.object) !== JSON.stringify(o.object)) {
      out.push({
        ...b,
        action: o.kind === 'Job' ? 'replace' : 'update',
        fields: changedPaths(old.object, o.object, ''),
        images: imageChanges(old.object, o.object),
      });
    }
  }
  for (const [key, o] of before) if (!after.has(key)) out.push({ chart: o.chart, kind: o.kind, name: o.name, action: 'delete' });
  return out;
}

/** What the API server and controllers write on their own: not a change the agent makes. */
function normalise(o: KubernetesObject): unknown {
  const copy = structuredClone(o) as KubernetesObject & { status?: unknown };
  delete copy.status;
  const m = copy.metadata ?? {};
  for (const k of ['managedFields', 'resourceVersion', 'generation', 'uid', 'creationTimestamp'] as const) delete m[k];
  return copy;
}

type Container = { name: string; image?: string };
function containersOf(o: KubernetesObject | undefined): Container[] {
  const spec = (
    o as
      | {
          spec?: {
            template?: { spec?: { containers?: Container[]; initContainers?: Container[] } };
            jobTemplate?: { spec?: { template?: { spec?: { containers?: Container[] } } } };
          };
        }
      | undefined
  )?.spec;
  const pod = spec?.template?.spec ?? spec?.jobTemplate?.spec?.template?.spec;
  return [...((pod as { initContainers?: Container[] } | undefined)?.initContainers ?? []), ...(pod?.containers ?? [])];
}

function imageChanges(from: KubernetesObject | undefined, to: KubernetesObject): ImageChange[] | undefined {
  const was = new Map(containersOf(from).map((c) => [c.name, c.image]));
  const out = containersOf(to)
    .filter((c) => was.get(c.name) !== c.image)
    .map((c) => ({ container: c.name, from: was.get(c.name), to: c.image }));
  return out.length > 0 ? out : undefined;
}

function changedPaths(a: unknown, b: unknown, prefix: string): string[] {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObj(a) && isObj(b)) {
    return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort().flatMap((k) => changedPaths(a[k], b[k], prefix ? `${prefix}.${k}` : k));
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) return a.flatMap((x, i) => changedPaths(x, b[i], `${prefix}[${i}]`));
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [prefix];
}
