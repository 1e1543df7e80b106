/**
 * Items added with the same key in the same turn of the event loop go to
 * `flush` together, at most `max` at a time (a full batch is flushed with the
 * rest of the turn, and the next item starts another). What the engine starts
 * at once (the objects of one bulk create, their follow-ups) thus becomes one
 * request instead of one per object.
 */
export class TurnBatches<T> {
  private readonly open = new Map<string, T[]>();
  private readonly max: number;
  private readonly flush: (items: T[]) => void;

  constructor(max: number, flush: (items: T[]) => void) {
    this.max = max;
    this.flush = flush;
  }

  add(key: string, item: T): void {
    let batch = this.open.get(key);
    if (!batch) {
      const fresh: T[] = [];
      this.open.set(key, fresh);
      setImmediate(() => {
        if (this.open.get(key) === fresh) this.open.delete(key);
        this.flush(fresh);
      });
      batch = fresh;
    }
    batch.push(item);
    if (batch.length >= this.max) this.open.delete(key);
  }
}
