import type { LoadBalancerSpec } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';
import { memberName } from './adapter.ts';
import type { KindRules, RuleFinding } from '../kit/rule.ts';

/** Health monitor types Octavia accepts for a pool of each protocol. */
const monitorTypes: Record<string, readonly string[]> = {
  HTTP: ['HTTP', 'TCP', 'PING'],
  HTTPS: ['HTTPS', 'TLS-HELLO', 'TCP', 'PING'],
  TCP: ['HTTP', 'HTTPS', 'TCP', 'TLS-HELLO', 'PING'],
  UDP: ['UDP-CONNECT', 'HTTP', 'TCP', 'PING'],
};

type Listener = NonNullable<LoadBalancerSpec['listeners']>[number];
type Add = (code: string, path: (string | number)[], message: string) => void;

/** What Octavia would refuse in the middle of a change, said before anything is applied. */
export const loadBalancerRules: KindRules = {
  kind: 'LoadBalancer',
  check(manifests) {
    const out: RuleFinding[] = [];
    for (const m of manifests) {
      const add: Add = (code, path, message) => out.push({ manifest: m, code: `loadbalancer.${code}`, path, message });
      checkListeners(m, add);
    }
    return out;
  },
};

function checkListeners(m: Manifest, add: Add): void {
  const names = new Map<string, number>();
  const ports = new Map<string, number>();
  ((m.spec as LoadBalancerSpec).listeners ?? []).forEach((l, i) => {
    const at = ['spec', 'listeners', i];
    const twin = names.get(l.name);
    if (twin !== undefined) add('listener-name', [...at, 'name'], `listener name "${l.name}" is also listeners[${twin}]'s: give each listener its own name`);
    else names.set(l.name, i);
    // UDP and TCP may share a port number; two listeners of one transport may not.
    const key = `${l.protocol === 'UDP' ? 'udp' : 'tcp'}/${l.port}`;
    const samePort = ports.get(key);
    if (samePort !== undefined)
      add(
        'listener-port',
        [...at, 'port'],
        `port ${l.port} is also listeners[${samePort}]'s: Octavia takes one listener per port and transport; pick another port`,
      );
    else ports.set(key, i);
    checkPool(l, [...at, 'pool'], add);
  });
}

function checkPool(l: Listener, at: (string | number)[], add: Add): void {
  const pool = l.pool;
  if (!pool) return;
  const hm = pool.healthMonitor;
  if (hm) {
    const allowed = monitorTypes[l.protocol]!;
    if (!allowed.includes(hm.type))
      add(
        'monitor-type',
        [...at, 'healthMonitor', 'type'],
        `a ${l.protocol} pool cannot be probed with a ${hm.type} monitor: use one of ${allowed.join(', ')}`,
      );
    if (hm.timeout > hm.delay)
      add(
        'monitor-timeout',
        [...at, 'healthMonitor', 'timeout'],
        `timeout ${hm.timeout} s is longer than delay ${hm.delay} s: a probe must end before the next starts; lower timeout or raise delay`,
      );
    if ((hm.urlPath ?? hm.expectedCodes ?? hm.httpMethod) !== undefined && hm.type !== 'HTTP' && hm.type !== 'HTTPS')
      add(
        'monitor-http',
        [...at, 'healthMonitor'],
        `urlPath, expectedCodes and httpMethod are for HTTP and HTTPS monitors, not ${hm.type}: remove them or change the type`,
      );
  }
  const members = new Map<string, number>();
  const backends = new Map<string, number>();
  (pool.members ?? []).forEach((mb, j) => {
    const name = memberName(mb);
    const twin = members.get(name);
    if (twin !== undefined)
      add('member-name', [...at, 'members', j], `member name "${name}" is also members[${twin}]'s in this pool: give one a name of its own`);
    else members.set(name, j);
    if (mb.address === undefined) return;
    const key = `${mb.address}:${mb.port}`;
    const same = backends.get(key);
    if (same !== undefined)
      add(
        'member-duplicate',
        [...at, 'members', j, 'address'],
        `${key} is also members[${same}]: Octavia refuses the same address and port twice in a pool; remove one`,
      );
    else backends.set(key, j);
  });
}
