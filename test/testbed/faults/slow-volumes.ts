import type { SeenRequest } from './openstack-proxy.ts';

/**
 * A SIMULATION, named so wherever it is used: the test bed's Cinder (fake
 * backend) extends and deletes a volume at once, so a test of what a slow
 * one does shows the volumes it picks (by name prefix) as Cinder shows a
 * slow backend's: `extending` for `slowMs` after an os-extend, and
 * `deleting` for `slowMs` after the first DELETE, which reaches Cinder only
 * then (OpenStackFaultProxy's `requests` defers it). The volumes are real;
 * after `slowMs` every client sees them as Cinder holds them.
 */
export function slowVolumes(opts: { namePrefix: string; slowMs: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  // What the answers showed: id → name (a DELETE names only the id).
  const names = new Map<string, string>();
  const deleting = new Map<string, number>();
  const extending = new Map<string, number>();
  const ours = (id: string): boolean => names.get(id)?.startsWith(opts.namePrefix) === true;
  const within = (since: number | undefined): boolean => since !== undefined && now() - since < opts.slowMs;

  const requests = {
    paths: /\/volumes\/[0-9a-f-]{36}(\/action)?(\?|$)/,
    seen: ({ service, method, path, body }: SeenRequest): { deferMs: number; status: number } | undefined => {
      const id = /\/volumes\/([0-9a-f-]{36})/.exec(path)?.[1];
      if (service !== 'volumev3' || !id || !ours(id)) return undefined;
      if (method === 'DELETE') {
        const first = deleting.get(id) ?? now();
        deleting.set(id, first);
        return { deferMs: Math.max(0, first + opts.slowMs - now()), status: 202 };
      }
      if (method === 'POST' && body.includes('"os-extend"')) extending.set(id, now());
      return undefined;
    },
  };

  const shown = (v: Record<string, unknown>): Record<string, unknown> => {
    if (typeof v.id !== 'string') return v;
    if (typeof v.name === 'string') names.set(v.id, v.name);
    if (within(deleting.get(v.id))) return { ...v, status: 'deleting' };
    if (within(extending.get(v.id)) && v.status === 'available') return { ...v, status: 'extending' };
    return v;
  };
  const simulate = ({ service, method, body }: { service: string; method: string; path: string; body: unknown }): unknown => {
    if (service !== 'volumev3' || method !== 'GET' || typeof body !== 'object' || body === null) return body;
    const b = body as { volume?: Record<string, unknown>; volumes?: Record<string, unknown>[] };
    if (b.volume) return { ...b, volume: shown(b.volume) };
    if (Array.isArray(b.volumes)) return { ...b, volumes: b.volumes.map(shown) };
    return body;
  };
  return { requests, simulate, extended: (id: string) => extending.has(id), deleted: (id: string) => deleting.has(id) };
}
