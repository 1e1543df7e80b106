/**
 * A SIMULATION, named so wherever it is used: Nova's fake driver makes a
 * server ACTIVE at once, so a test of what a slow build does shows the
 * servers it picks (by name prefix) as BUILD/spawning until `buildMs` after
 * Nova created them. It changes only the answers the fault proxy passes
 * (OpenStackFaultProxy's `simulate`); the servers themselves are real and
 * ACTIVE in Nova, and after `buildMs` every client sees them so.
 */
export function slowBuilds(opts: { namePrefix: string; buildMs: number; now?: () => number }): (answer: { service: string; method: string; path: string; body: unknown }) => unknown {
  const now = opts.now ?? Date.now;
  const building = (server: Record<string, unknown>): Record<string, unknown> => {
    const created = typeof server.created === 'string' ? Date.parse(server.created) : Number.NaN;
    if (typeof server.name !== 'string' || !server.name.startsWith(opts.namePrefix) || server.status !== 'ACTIVE') return server;
    if (!Number.isFinite(created) || now() - created >= opts.buildMs) return server;
    return { ...server, status: 'BUILD', 'OS-EXT-STS:vm_state': 'building', 'OS-EXT-STS:task_state': 'spawning', 'OS-EXT-STS:power_state': 0 };
  };
  return ({ service, method, body }) => {
    if (service !== 'compute' || method !== 'GET' || typeof body !== 'object' || body === null) return body;
    const b = body as { server?: Record<string, unknown>; servers?: Record<string, unknown>[] };
    if (b.server) return { ...b, server: building(b.server) };
    if (Array.isArray(b.servers)) return { ...b, servers: b.servers.map(building) };
    return body;
  };
}
