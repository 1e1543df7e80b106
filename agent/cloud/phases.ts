import { chartInfo } from './catalogue.ts';
import { installGroups } from './groups.ts';
import type { RenderedChart } from './render-cloud.ts';
import type { RenderedObject } from './render.ts';

/**
 * The ordered steps of an install (or of a re-apply): per install group, the charts'
 * plain objects, then their hook Jobs by ascending weight (each weight one step: the Jobs
 * of the step run together and must complete before the next weight), then the gate on the
 * group's workloads. Hooks come before the workload gate — never after, which is the
 * deadlock of `helm --wait` and of Argo CD's PostSync with OpenStack-Helm.
 */
export type Step =
  | { kind: 'apply'; group: number; charts: string[]; objects: RenderedObject[] }
  | { kind: 'hooks'; group: number; charts: string[]; weight: number; when: 'pre' | 'post'; objects: RenderedObject[] }
  | { kind: 'gate'; group: number; charts: string[]; objects: RenderedObject[] };

/** Kinds applied first inside a step: what others mount or reference. */
const KIND_ORDER = [
  'Namespace',
  'CustomResourceDefinition',
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'PersistentVolumeClaim',
  'Role',
  'ClusterRole',
  'RoleBinding',
  'ClusterRoleBinding',
  'Service',
];
const kindRank = (k: string): number => (KIND_ORDER.includes(k) ? KIND_ORDER.indexOf(k) : KIND_ORDER.length);
export const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job']);

export function installSteps(rendered: readonly RenderedChart[]): Step[] {
  const infos = rendered.map((c) => chartInfo(c.chart) ?? { chart: c.chart, infrastructure: false, enabledByDefault: false, needs: [] });
  const groups = installGroups(infos);
  const steps: Step[] = [];
  groups.forEach((charts, group) => {
    const of = rendered.filter((c) => charts.includes(c.chart));
    const all = of.flatMap((c) => c.objects);
    const main = all.filter((o) => o.phase.kind === 'main');
    const pre = all.filter((o) => o.phase.kind === 'hook' && o.phase.when === 'pre');
    const post = all.filter((o) => o.phase.kind === 'hook' && o.phase.when === 'post');
    for (const [when, hooks] of [
      ['pre', pre],
      ['post', post],
    ] as const) {
      if (when === 'post') steps.push({ kind: 'apply', group, charts, objects: [...main].sort((a, b) => kindRank(a.kind) - kindRank(b.kind)) });
      const weights = [...new Set(hooks.map((o) => (o.phase as { weight: number }).weight))].sort((a, b) => a - b);
      for (const weight of weights) {
        const objects = hooks.filter((o) => (o.phase as { weight: number }).weight === weight).sort((a, b) => kindRank(a.kind) - kindRank(b.kind));
        steps.push({ kind: 'hooks', group, charts, weight, when, objects });
      }
    }
    const workloads = all.filter((o) => o.phase.kind !== 'delete' && WORKLOAD_KINDS.has(o.kind) && (o.kind !== 'Job' || o.phase.kind === 'main'));
    steps.push({ kind: 'gate', group, charts, objects: workloads });
  });
  return steps;
}

/** One line per step, for logs, plans and tests. */
export function describeStep(s: Step): string {
  const what = s.kind === 'hooks' ? `${s.when}-hooks ${s.weight}` : s.kind;
  return `${s.group}:${what} [${s.charts.join(',')}] ${s.objects.map((o) => `${o.kind}/${o.name}`).join(' ')}`;
}

/** One short line per step, for plans: `1:hooks pre 2 [keystone] 1 object`. */
export function summariseStep(s: Step): string {
  const what = s.kind === 'hooks' ? `${s.when}-hooks ${s.weight}` : s.kind;
  return `${s.group}:${what} [${s.charts.join(',')}] ${s.objects.length} object${s.objects.length === 1 ? '' : 's'}`;
}
