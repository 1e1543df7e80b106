import { describe, expect, it } from 'vitest';
import { TurnBatches } from '../../agent/util/turn-batches.ts';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('TurnBatches', () => {
  it('flushes what one turn added under one key together, at most `max` at a time, and a later turn apart', async () => {
    const flushed: string[][] = [];
    const batches = new TurnBatches<string>(3, (items) => flushed.push(items));
    for (const x of ['a1', 'a2', 'b1', 'a3', 'a4']) batches.add(x[0]!, x);
    expect(flushed).toEqual([]);
    await nextTurn();
    expect(flushed).toEqual([['a1', 'a2', 'a3'], ['b1'], ['a4']]);
    batches.add('a', 'a5');
    await nextTurn();
    expect(flushed.at(-1)).toEqual(['a5']);
  });
});
