import type { FieldChange, KindAdapter, Remote } from '../kinds/kit/adapter.ts';
import { specHash, stableJson } from '../ownership/marker.ts';
import type { Drift, FieldDiff } from './plan.ts';

export interface Difference {
  /** Mutable fields to set, desired values. */
  updates: Record<string, unknown>;
  /** The manifest changed a field OpenStack cannot change in place. */
  replace: boolean;
  fields: FieldDiff[];
  drift: Omit<Drift, 'address'>[];
  /** The marker's hash is not the manifest's, yet nothing needs replacing (a `replace` field was removed from the manifest): the marker is rewritten. */
  staleHash: boolean;
}

/** Hash of the desired `replace` fields: stored in the marker at create time. */
export function replaceHash(adapter: KindAdapter, desired: Record<string, unknown>): string {
  const immutable: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(desired)) if (adapter.fields[k] === 'replace') immutable[k] = v;
  return specHash(immutable);
}

/**
 * Desired against observed, for the fields the manifest declares. A changed
 * manifest (its replace-hash differs from the marker's) replaces; the same
 * manifest with different observed immutable values is drift made outside
 * Git: reported, left alone. Mutable differences are updates either way.
 */
export function difference(adapter: KindAdapter, desired: Record<string, unknown>, remote: Remote): Difference {
  const out: Difference = { updates: {}, replace: false, fields: [], drift: [], staleHash: false };
  const manifestChanged = remote.marker !== undefined && remote.marker.specHash !== replaceHash(adapter, desired);
  for (const [key, want] of Object.entries(desired)) {
    const change: FieldChange = adapter.fields[key] ?? 'replace';
    const observable = key in remote.fields;
    const have = remote.fields[key];
    const differs = observable && stableJson(have) !== stableJson(want);
    if (change === 'update') {
      if (differs) {
        out.updates[key] = want;
        out.fields.push({ path: key, before: have, after: want, forcesReplacement: false });
        out.drift.push({ path: key, expected: want, actual: have, immutable: false });
      }
    } else if (manifestChanged && (differs || !observable)) {
      out.replace = true;
      out.fields.push({ path: key, before: observable ? have : '(not observable)', after: want, forcesReplacement: true });
    } else if (differs) {
      out.drift.push({ path: key, expected: want, actual: have, immutable: true });
    }
  }
  out.staleHash = manifestChanged && !out.replace;
  return out;
}
