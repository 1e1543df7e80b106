import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePeers } from '../deferred.ts';
import { kube } from '../kubernetes/peer.ts';

/**
 * The test bed's real node (test/testbed/node/up.sh): a kubelet at the control plane's version
 * with Debian's containerd and runc, beside kwok's fake node. It is tainted, so a pod runs there
 * only when it tolerates `taint` and selects `label` (`onRealNode` gives both).
 */
const here = dirname(fileURLToPath(import.meta.url));
const home = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';
const common = readFileSync(join(here, 'common.sh'), 'utf8');
const setting = (name: string): string => {
  const m = new RegExp(`^${name}=(?:\\$\\{[A-Z_]+:-)?"?([^"}\\n]+)`, 'm').exec(common);
  if (!m) throw new Error(`test/testbed/node/common.sh sets no ${name}`);
  return m[1]!;
};

export const realNode = {
  name: process.env.KUPENSTACK_REAL_NODE ?? setting('NODE_NAME'),
  ip: setting('NODE_IP'),
  subnet: setting('NODE_SUBNET'),
  bridge: setting('NODE_BRIDGE'),
  taint: { key: 'kupenstack.test/real', value: 'true', effect: 'NoSchedule' },
  label: { key: 'kupenstack.test/real', value: 'true' },
  dir: join(home, 'node'),
  /** containerd's socket (its own, not the machine's default). */
  socket: join(home, 'node/containerd/containerd.sock'),
  kubeletBin: join(kube.bin, 'kubelet'),
  /** `name=value` of the host sysctls the node must leave alone, as read before its kubelet started. */
  sysctlsBefore: join(home, 'node/sysctl.host'),
  /** The kubelet's private copies of the sysctls it writes (node/kubelet.sh), one file per name, `/` as `_`. */
  sysctlCopies: join(home, 'node/sysctl-copies'),
} as const;

/** Pod spec fields that place a pod on the real node (and nowhere else). */
export const onRealNode = {
  nodeSelector: { [realNode.label.key]: realNode.label.value },
  tolerations: [{ key: realNode.taint.key, operator: 'Equal', value: realNode.taint.value, effect: realNode.taint.effect }],
} as const;

/** status.sh: containerd and the kubelet are ours and running, the node Ready and held by its kubelet. */
export function nodeUp(): boolean {
  return spawnSync('bash', [join(here, 'status.sh')], { stdio: 'ignore', timeout: 60_000 }).status === 0;
}

// Like the plane: deferred by the global setup while the kubelet builds; importing this starts the node.
await ensurePeers(['registry', 'kubernetes', 'node'], () => Promise.resolve(nodeUp()));
