import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import YAML from 'yaml';
import { ChartError } from './errors.ts';
import { runHelm } from './helm.ts';
import type { Values } from './values.ts';

/**
 * `helm template` of one chart with the values KupenStack computed, parsed into objects
 * and classified as Argo CD does with Helm hooks, but without its PostSync deadlock:
 *  - no hook → phase `main` (applied first);
 *  - post-install/post-upgrade (OSH's db-init, db-sync, ks-*, bootstrap Jobs) and
 *    pre-install/pre-upgrade → a hook phase ordered by weight, run before the workload gate;
 *  - pre-delete/post-delete → kept for deletion time, never applied with the rest;
 *  - test hooks → dropped (and --skip-tests).
 * The helm.sh/hook* annotations are removed from what is applied: Helm's semantics do not
 * leak into objects the agent owns. No Helm release is created: helm only renders.
 */
export type Phase = { kind: 'main' } | { kind: 'hook'; when: 'pre' | 'post'; weight: number } | { kind: 'delete' };

export interface RenderedObject {
  chart: string;
  apiVersion: string;
  kind: string;
  name: string;
  /** Set for namespaced kinds (helm template fills metadata.namespace only when the chart does). */
  namespace?: string;
  phase: Phase;
  /** Source template (`keystone/templates/jobs.yaml`), for messages. */
  template?: string;
  object: Record<string, unknown>;
}

export interface RenderInput {
  helm: string;
  /** Unpacked chart folder. */
  dir: string;
  chart: string;
  namespace: string;
  values: Values;
  /** `/version` of the cluster, e.g. v1.35.8 (charts compare .Capabilities.KubeVersion). */
  kubeVersion?: string;
  signal?: AbortSignal;
}

export async function renderChart(input: RenderInput): Promise<RenderedObject[]> {
  const args = [
    'template',
    input.chart,
    input.dir,
    '--namespace',
    input.namespace,
    '--skip-tests',
    '--include-crds',
    '--values',
    '-',
    ...(input.kubeVersion ? ['--kube-version', input.kubeVersion] : []),
  ];
  let stdout: string;
  try {
    ({ stdout } = await runHelm(input.helm, args, { input: JSON.stringify(input.values), signal: input.signal }));
  } catch (err) {
    throw new ChartError('chart.render', input.chart, `helm template failed: ${(err as Error).message}`, { cause: err });
  }
  return parseRendered(stdout, input.chart);
}

export function parseRendered(stdout: string, chart: string): RenderedObject[] {
  const out: RenderedObject[] = [];
  // YAML 1.1, as Helm and kubectl read it: `defaultMode: 0555` is octal there, decimal 555 in 1.2.
  for (const doc of YAML.parseAllDocuments(stdout, { version: '1.1' })) {
    if (doc.errors.length > 0) throw new ChartError('chart.render', chart, `helm template produced invalid YAML: ${doc.errors[0]!.message}`);
    const template = /# Source: (\S+)/.exec(doc.commentBefore ?? '')?.[1];
    const object = doc.toJS() as Record<string, unknown> | null;
    if (!object || typeof object !== 'object') continue;
    const metadata = (object.metadata ?? {}) as { name?: string; namespace?: string; annotations?: Record<string, string> };
    const hook = metadata.annotations?.['helm.sh/hook'];
    const phase = classify(hook, metadata.annotations?.['helm.sh/hook-weight']);
    if (phase === undefined) continue; // a test hook
    if (metadata.annotations) {
      for (const k of Object.keys(metadata.annotations)) if (k.startsWith('helm.sh/hook')) delete metadata.annotations[k];
      if (Object.keys(metadata.annotations).length === 0) delete metadata.annotations;
    }
    out.push({
      chart,
      apiVersion: String(object.apiVersion),
      kind: String(object.kind),
      name: String(metadata.name),
      namespace: metadata.namespace,
      phase,
      template,
      object,
    });
  }
  return out;
}

function classify(hook: string | undefined, weight: string | undefined): Phase | undefined {
  if (hook === undefined) return { kind: 'main' };
  const kinds = hook.split(',').map((h) => h.trim());
  if (kinds.some((k) => k.startsWith('test'))) return undefined;
  if (kinds.some((k) => k === 'pre-install' || k === 'pre-upgrade')) return { kind: 'hook', when: 'pre', weight: Number(weight ?? 0) || 0 };
  if (kinds.some((k) => k === 'post-install' || k === 'post-upgrade')) return { kind: 'hook', when: 'post', weight: Number(weight ?? 0) || 0 };
  return { kind: 'delete' };
}

/**
 * The chart's values.yaml and its release overrides: values_overrides/<release>.yaml, else
 * OSH's <release>-ubuntu_noble.yaml (undefined when the chart has neither).
 */
export async function chartDefaults(dir: string, release: string): Promise<{ defaults: Values; releaseOverride?: Values }> {
  const defaults = (YAML.parse(await readFile(join(dir, 'values.yaml'), 'utf8')) ?? {}) as Values;
  const read = (name: string): Promise<string | undefined> => readFile(join(dir, 'values_overrides', name), 'utf8').catch(() => undefined);
  const text = (await read(`${release}.yaml`)) ?? (await read(`${release}-ubuntu_noble.yaml`));
  return { defaults, releaseOverride: text === undefined ? undefined : ((YAML.parse(text) ?? {}) as Values) };
}
