import type { Manifest } from '../model/manifest.ts';
import type { RefPath, SchemaRegistry } from '../schema/registry.ts';

/** One `xxxRef: {name}` found in a manifest. */
export interface Reference {
  from: Manifest;
  /** Where the `{name}` object sits in the manifest. */
  path: (string | number)[];
  targetKind: string;
  targetName: string;
  weak: boolean;
}

/** Every reference a manifest holds, found through its kind's schema annotations. */
export function referencesOf(m: Manifest, registry: SchemaRegistry): Reference[] {
  const info = registry.kinds.get(m.kind);
  if (!info) return [];
  const out: Reference[] = [];
  for (const ref of info.refs) collect(m, ref, m, 0, [], out);
  return out;
}

function collect(m: Manifest, ref: RefPath, node: unknown, depth: number, at: (string | number)[], out: Reference[]): void {
  if (depth === ref.path.length) {
    const name = (node as { name?: unknown } | null)?.name;
    if (typeof name === 'string') out.push({ from: m, path: at, targetKind: ref.target, targetName: name, weak: ref.weak });
    return;
  }
  const seg = ref.path[depth];
  if (seg === '*') {
    if (Array.isArray(node)) node.forEach((item, i) => collect(m, ref, item, depth + 1, [...at, i], out));
  } else if (node !== null && typeof node === 'object' && seg !== undefined && seg in node) {
    collect(m, ref, (node as Record<string, unknown>)[seg], depth + 1, [...at, seg], out);
  }
}
