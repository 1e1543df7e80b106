/** Per-call counters (service, method, status) that tests, benchmarks and metrics read. */
export class ApiCounters {
  private readonly counts = new Map<string, number>();
  private readonly collections = new Map<string, number>();

  /** Per API collection (`network GET /ports`): a scale test prints calls per kind from these. */
  recordCollection(service: string, method: string, collection: string): void {
    const key = `${service} ${method} ${collection}`;
    this.collections.set(key, (this.collections.get(key) ?? 0) + 1);
  }

  /** Calls so far per `service METHOD /collection`. */
  byCollection(): Record<string, number> {
    return Object.fromEntries([...this.collections].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /** A request is about to leave (after any write gate): counted on its answer, in record; a subclass may clock it. */
  sending(_service: string, _method: string): void {}

  record(service: string, method: string, status: number): void {
    const key = `${service} ${method} ${status}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  entries(): { service: string; method: string; status: number; count: number }[] {
    return [...this.counts].map(([key, count]) => {
      const [service = '', method = '', status = '0'] = key.split(' ');
      return { service, method, status: Number(status), count };
    });
  }

  /** GET and HEAD calls. */
  get read(): number {
    return this.sum((e) => callKind(e.method) === 'read');
  }

  /** Everything that may change the cloud (token requests are counted apart, as AUTH). */
  get write(): number {
    return this.sum((e) => callKind(e.method) === 'write');
  }

  get auth(): number {
    return this.sum((e) => callKind(e.method) === 'token');
  }

  sum(filter: (e: { service: string; method: string; status: number }) => boolean): number {
    return this.entries()
      .filter(filter)
      .reduce((n, e) => n + e.count, 0);
  }

  reset(): void {
    this.counts.clear();
    this.collections.clear();
  }
}

/** What a call is by its method: GET and HEAD read, AUTH asks for a token, anything else may change the cloud. */
export function callKind(method: string): 'read' | 'write' | 'token' {
  if (method === 'GET' || method === 'HEAD') return 'read';
  return method === 'AUTH' ? 'token' : 'write';
}
