import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { specHash, stableJson } from '../../agent/ownership/marker.ts';

/** The first implementation, kept here as the definition: markers written by earlier versions hash with it, so the output must never change. */
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${reference((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

describe('stableJson', () => {
  it('writes exactly what the first implementation wrote, for any JSON value with undefined members', () => {
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null), fc.constant(undefined)),
      node: fc.oneof({ depthSize: 'small' }, tie('leaf'), fc.array(tie('node'), { maxLength: 5 }), fc.dictionary(fc.string(), tie('node'), { maxKeys: 5 })),
    })).node;
    fc.assert(fc.property(value, (v) => v === undefined || stableJson(v) === reference(v)), { numRuns: 2000 });
  });

  it('is independent of key order, and so is the spec hash', () => {
    expect(stableJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    expect(specHash({ b: 1, a: 2 })).toBe(specHash({ a: 2, b: 1 }));
    // Pinned: a change here would make every object created before it look replaced.
    expect(specHash({ cidr: '10.0.0.0/24', ipVersion: 4 })).toBe(createdBefore);
  });
});

const createdBefore = '3087a9b3';
