import { describe, expect, it } from 'vitest';
import { adapters, kindExports, kindRules, kinds } from '../../agent/kinds/registry.ts';

// kinds/registry.ts is the one table of kinds: a row's parts must be that
// kind's, and each list the engine, the validator and export read is the
// table's, nothing left out.
describe('the kind registry', () => {
  it('has one row per kind, and each part of a row names its kind', () => {
    const names = kinds.map((r) => r.kind);
    expect(kinds.length).toBeGreaterThan(10);
    expect(new Set(names).size).toBe(names.length);
    for (const r of kinds) {
      expect([r.adapter?.kind, r.rules?.kind, r.export?.kind].filter((k) => k !== undefined), r.kind).toEqual(
        [r.adapter, r.rules, r.export].filter((p) => p !== undefined).map(() => r.kind),
      );
      expect(r.adapter ?? r.rules ?? r.export, `${r.kind} brings nothing`).toBeDefined();
    }
  });

  it('hands every adapter, rule set and export of the table to its reader', () => {
    expect([...adapters.keys()]).toEqual(kinds.filter((r) => r.adapter).map((r) => r.kind));
    expect(kindRules.map((r) => r.kind)).toEqual(kinds.filter((r) => r.rules).map((r) => r.kind));
    expect(kindExports.map((e) => e.kind).sort()).toEqual(kinds.filter((r) => r.export).map((r) => r.kind).sort());
  });
});
