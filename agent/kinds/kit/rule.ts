import type { Manifest } from '../../model/manifest.ts';

/**
 * What a kind knows about its own valid specs beyond the schema: combinations
 * of fields that contradict each other, or that the OpenStack service would
 * refuse at create time (address arithmetic, port ranges). Rules run on
 * manifests that passed their schema, with the whole revision in view, before
 * anything is applied. The validator positions each finding in its file.
 */
export interface KindRules {
  kind: string;
  /** Every manifest of `kind` in the revision (names unique), in file order. */
  check(manifests: Manifest[], revision: RevisionView): RuleFinding[];
}

/** The other manifests of the revision, for rules that compare across them. */
export interface RevisionView {
  find(kind: string, name: string, namespace: string | undefined): Manifest | undefined;
}

export interface RuleFinding {
  manifest: Manifest;
  /** Stable diagnostic code (`subnet.overlap`): tools match on it. */
  code: string;
  /** The JSON path the finding points at, inside the manifest. */
  path: (string | number)[];
  /** What is wrong and how to fix it. */
  message: string;
}

/** The `name` of a `{name}` reference, if it has one. */
export function refName(ref: unknown): string | undefined {
  const name = (ref as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' ? name : undefined;
}
