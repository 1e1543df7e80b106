import type { ImageRolloutSpec } from '../../model/kinds.generated.ts';

type Selector = ImageRolloutSpec['waves'][number]['namespaceSelector'];

/** The name of the implicit last wave: the namespaces no wave selects. */
export const restWave = 'rest';

/** Whether a Kubernetes label selector takes labels (matchLabels and every matchExpression; an empty selector takes all). */
export function selects(selector: Selector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const values = e.values ?? [];
    if (e.operator === 'In' && !(has && values.includes(value!))) return false;
    if (e.operator === 'NotIn' && has && values.includes(value!)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** The wave a namespace belongs to: the first whose selector takes its labels, else the implicit `rest`. */
export function waveOf(spec: Pick<ImageRolloutSpec, 'waves'>, labels: Readonly<Record<string, string>>): string {
  return spec.waves.find((w) => selects(w.namespaceSelector, labels))?.name ?? restWave;
}
