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
  return refsIn(m.kind, m, registry).map((r) => ({ from: m, ...r }));
}

/** The references in any object of a kind (a manifest, or a custom resource as the API server returns it). */
export function refsIn(kind: string, object: unknown, registry: SchemaRegistry): Omit<Reference, 'from'>[] {
  const out: Omit<Reference, 'from'>[] = [];
  for (const ref of registry.kinds.get(kind)?.refs ?? []) collect(ref, object, 0, [], out);
  return out;
}

function collect(ref: RefPath, node: unknown, depth: number, at: (string | number)[], out: Omit<Reference, 'from'>[]): void {
  if (depth === ref.path.length) {
    const name = (node as { name?: unknown } | null)?.name;
    if (typeof name === 'string') out.push({ path: at, targetKind: ref.target, targetName: name, weak: ref.weak });
    return;
  }
  const seg = ref.path[depth];
  if (seg === '*') {
    if (Array.isArray(node)) node.forEach((item, i) => collect(ref, item, depth + 1, [...at, i], out));
  } else if (node !== null && typeof node === 'object' && seg !== undefined && seg in node) {
    collect(ref, (node as Record<string, unknown>)[seg], depth + 1, [...at, seg], out);
  }
}
