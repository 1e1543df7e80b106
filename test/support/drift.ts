import { expect } from 'vitest';
import type { KindAdapter, Remote } from '../../agent/kinds/kit/adapter.ts';
import { stableJson } from '../../agent/ownership/marker.ts';

/** The desired fields that differ from what OpenStack reports, as the engine compares them; every field must be declared. */
export function drift(adapter: KindAdapter, desired: Record<string, unknown>, remote: Remote): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  expect(Object.entries(desired).length, 'desired has fields').toBeGreaterThan(0);
  for (const [k, v] of Object.entries(desired)) {
    expect(adapter.fields[k], `field ${k} is declared`).toBeDefined();
    if (stableJson(v) !== stableJson(remote.fields[k])) out[k] = v;
  }
  return out;
}
