import { describe, expect, it } from 'vitest';
import { kindRules } from '../../agent/kinds/registry.ts';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';

// The validator runs a kind's rules by the kind's name: a misspelt name would
// silently switch them off (the corpus cases show each rule firing).
describe('the kind rules table', () => {
  it('names only kinds the schemas define, each once', () => {
    const registry = loadSchemaRegistry();
    const names = kindRules.map((r) => r.kind);
    expect(names.filter((k) => !registry.kinds.has(k))).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
  });
});
