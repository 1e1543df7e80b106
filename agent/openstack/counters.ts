/** Per-call counters (service, method, status) that tests, benchmarks and metrics read. */
export class ApiCounters {
  private readonly counts = new Map<string, number>();

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
    return this.sum((e) => e.method === 'GET' || e.method === 'HEAD');
  }

  /** Everything that may change the cloud (token requests are counted apart, as AUTH). */
  get write(): number {
    return this.sum((e) => e.method !== 'GET' && e.method !== 'HEAD' && e.method !== 'AUTH');
  }

  get auth(): number {
    return this.sum((e) => e.method === 'AUTH');
  }

  sum(filter: (e: { service: string; method: string; status: number }) => boolean): number {
    return this.entries().filter(filter).reduce((n, e) => n + e.count, 0);
  }

  reset(): void {
    this.counts.clear();
  }
}
