import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kube, kubectl, kubectlOk } from '../../testbed/kubernetes/peer.ts';
import { nodeUp, onRealNode, realNode } from '../../testbed/node/peer.ts';

/**
 * The test bed's real node (test/testbed/node/): a kubelet built at the control plane's version,
 * Debian's containerd and runc, a bridge CNI, beside kwok's fake node (a simulation, kept for
 * scale tests). What is asserted is what the API server, containerd and the host report.
 */

const ns = `ks-node-${randomBytes(3).toString('hex')}`;
const pauseImage = '127.0.0.1:5050/kupenstack-testbed/pause:3.10.1';

type Node = {
  metadata: { name: string; annotations?: Record<string, string>; managedFields?: { manager: string }[] };
  spec: { taints?: { key: string; value?: string; effect: string }[] };
  status: { conditions: { type: string; status: string }[]; addresses: { type: string; address: string }[]; nodeInfo: { kubeletVersion: string; containerRuntimeVersion: string } };
};
const ready = (n: Node): string | undefined => n.status.conditions.find((c) => c.type === 'Ready')?.status;
const hostSysctl = (name: string): string => readFileSync(`/proc/sys/${name}`, 'utf8').trim();
// The host tools (iptables-save, ip, findmnt) live in sbin, which a CI runner's or `env -i`'s PATH may lack: the test bed's scripts add it too (lib.sh).
const sbinPath = `/usr/local/sbin:/usr/sbin:/sbin:${process.env.PATH ?? '/usr/bin:/bin'}`;
const sh = (cmd: string): string => execFileSync('bash', ['-c', cmd], { encoding: 'utf8', env: { ...process.env, PATH: sbinPath } });

beforeAll(async () => {
  await kubectlOk(['create', 'namespace', ns]);
  await kubectlOk(['label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted']);
});
afterAll(async () => {
  await kubectl(['delete', 'namespace', ns, '--wait=false']);
});

function pod(name: string, real: boolean): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      ...(real ? onRealNode : {}),
      securityContext: { runAsNonRoot: true, runAsUser: 65535, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{ name: 'pause', image: pauseImage, securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } } }],
      terminationGracePeriodSeconds: 1,
    },
  });
}

describe('the real node beside kwok', () => {
  it('kubectl get nodes shows it Ready, registered by a kubelet at the plane\'s version on containerd, beside kwok\'s fake node', async () => {
    const nodes = (JSON.parse(await kubectlOk(['get', 'nodes', '-o', 'json', '--show-managed-fields'])) as { items: Node[] }).items;
    const real = nodes.find((n) => n.metadata.name === realNode.name);
    const fake = nodes.find((n) => n.metadata.name === kube.node);
    expect(real, `nodes: ${nodes.map((n) => n.metadata.name).join(', ')}`).toBeDefined();
    expect(fake).toBeDefined();
    expect(ready(real!)).toBe('True');
    expect(ready(fake!)).toBe('True');
    expect(real!.status.nodeInfo.kubeletVersion).toBe(kube.version);
    expect(real!.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/1\.6\./);
    expect(real!.status.addresses).toContainEqual({ type: 'InternalIP', address: realNode.ip });
    expect(real!.spec.taints).toContainEqual(realNode.taint);
    expect(fake!.metadata.annotations?.['kwok.x-k8s.io/node']).toBe('fake');
    // kwok (--manage-all-nodes) keeps off: the node's Lease is its kubelet's, and kwok never wrote the node.
    expect((await kubectlOk(['-n', 'kube-node-lease', 'get', 'lease', realNode.name, '-o', 'jsonpath={.spec.holderIdentity}'])).trim()).toBe(realNode.name);
    const managers = (real!.metadata.managedFields ?? []).map((m) => m.manager);
    expect(managers).toContain('kubelet');
    expect(managers.filter((m) => /kwok/i.test(m))).toEqual([]);
    // The kubelet binary is the cached build at that version.
    expect(execFileSync(realNode.kubeletBin, ['--version'], { encoding: 'utf8' }).trim()).toBe(`Kubernetes ${kube.version}`);
  });

  it('leaves the host sysctls as they were before it started; the kubelet wrote its values into private copies', () => {
    const before = readFileSync(realNode.sysctlsBefore, 'utf8').trim().split('\n').map((l) => l.split('='));
    expect(before.map(([name]) => name)).toEqual(expect.arrayContaining(['vm/overcommit_memory', 'kernel/panic', 'kernel/panic_on_oops', 'net/ipv4/ip_forward']));
    for (const [name, value] of before) expect(`${name}=${hostSysctl(name!)}`).toBe(`${name}=${value}`);
    // What the kubelet's setupKernelTunables writes (its constants), landed in its copies: the
    // protection, not a kubelet that left them alone, kept the host's values.
    const copy = (name: string): string => readFileSync(join(realNode.sysctlCopies, name.replaceAll('/', '_')), 'utf8').trim();
    expect({ overcommit: copy('vm/overcommit_memory'), panic: copy('kernel/panic'), oops: copy('kernel/panic_on_oops') }).toEqual({ overcommit: '1', panic: '10', oops: '1' });
  });

  it('runs a pod that tolerates its taint for real (containerd, runc, an IP on the bridge); a pod that does not goes to kwok', async () => {
    await kubectlOk(['apply', '-f', '-'], { input: pod('on-real', true) });
    await kubectlOk(['apply', '-f', '-'], { input: pod('on-kwok', false) });
    await kubectlOk(['-n', ns, 'wait', '--for=condition=Ready', 'pod/on-real', 'pod/on-kwok', '--timeout=120s']);
    type Pod = { spec: { nodeName: string }; status: { podIP: string; containerStatuses: { containerID: string }[] } };
    const real = JSON.parse(await kubectlOk(['-n', ns, 'get', 'pod', 'on-real', '-o', 'json'])) as Pod;
    const fake = JSON.parse(await kubectlOk(['-n', ns, 'get', 'pod', 'on-kwok', '-o', 'json'])) as Pod;
    expect(real.spec.nodeName).toBe(realNode.name);
    expect(fake.spec.nodeName).toBe(kube.node);
    expect(real.status.podIP.startsWith(realNode.subnet.replace(/0\/24$/, ''))).toBe(true);
    // containerd (our socket) runs the container the kubelet reported, as a process on this host.
    const id = real.status.containerStatuses[0]!.containerID.replace('containerd://', '');
    const tasks = sh(`ctr --address ${realNode.socket} --namespace k8s.io tasks ls`);
    expect(tasks).toMatch(new RegExp(`^${id}\\s+\\d+\\s+RUNNING`, 'm'));
    const pid = new RegExp(`^${id}\\s+(\\d+)`, 'm').exec(tasks)![1]!;
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).toBe('/pause\0');
    expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+65535\s/m);
    // The API server reaches the kubelet: its stats name the pod.
    const summary = JSON.parse(await kubectlOk(['get', '--raw', `/api/v1/nodes/${realNode.name}/proxy/stats/summary`])) as { pods: { podRef: { name: string; namespace: string } }[] };
    expect(summary.pods.map((p) => `${p.podRef.namespace}/${p.podRef.name}`)).toContain(`${ns}/on-real`);
    await kubectlOk(['-n', ns, 'delete', 'pod', 'on-real', 'on-kwok', '--wait=true', '--timeout=60s']);
    expect(sh(`ctr --address ${realNode.socket} --namespace k8s.io tasks ls -q`)).not.toContain(id);
  });

  it('testbed down leaves no chain, bridge, mount or network namespace of its own behind, and up brings it back Ready', async () => {
    // A pod down cannot stop through the kubelet (stopped first, as a killed session leaves it), its
    // namespace file holding stacked mounts, as CI once found 11 ("unlinkat …: device or resource busy"):
    // down releases it all the same.
    await kubectlOk(['apply', '-f', '-'], { input: pod('at-down', true) });
    await kubectlOk(['-n', ns, 'wait', '--for=condition=Ready', 'pod/at-down', '--timeout=120s']);
    const held = readdirSync('/run/netns').filter((f) => f.startsWith('cni-'));
    expect(held.length).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) sh(`mount --bind /run/netns/${held[0]} /run/netns/${held[0]}`);
    // At least 4: where /run/netns itself is bound twice (iproute2's race), each mount shows in both layers.
    expect(sh('cat /proc/self/mountinfo').split('\n').filter((l) => l.includes(` /run/netns/${held[0]} `)).length).toBeGreaterThanOrEqual(4);
    sh('cd test/testbed && . ./lib.sh && . ./kubernetes/common.sh && . ./node/common.sh && tb_dirs node && tb_stop kubelet');
    // The bridge is there before: the "gone" check below can fail (ip found on PATH, the name right).
    const link = () => spawnSync('ip', ['link', 'show', realNode.bridge], { encoding: 'utf8', env: { ...process.env, PATH: sbinPath } });
    expect(link().status, link().stderr).toBe(0);
    const down = spawnSync('bash', ['test/testbed/node/down.sh'], { encoding: 'utf8', timeout: 180_000 });
    expect(down.status, down.stderr).toBe(0);
    expect(nodeUp()).toBe(false);
    expect(sh('iptables-save')).not.toMatch(/KS-NODE/);
    const gone = link();
    expect(gone.status).not.toBe(0);
    expect(gone.stderr).toMatch(/does not exist/);
    expect(sh('findmnt -rn -o TARGET').split('\n').filter((m) => m.startsWith(realNode.dir) || m.startsWith('/run/netns/cni-'))).toEqual([]);
    expect(existsSync('/run/netns') ? readdirSync('/run/netns').filter((f) => f.startsWith('cni-')) : []).toEqual([]);
    const before = readFileSync(realNode.sysctlsBefore, 'utf8').trim().split('\n').map((l) => l.split('='));
    expect(before.length).toBeGreaterThan(0);
    for (const [name, value] of before) expect(`${name}=${hostSysctl(name!)}`).toBe(`${name}=${value}`);
    const up = spawnSync('bash', ['test/testbed/node/up.sh'], { encoding: 'utf8', timeout: 300_000 });
    expect(up.status, up.stderr).toBe(0);
    expect(nodeUp()).toBe(true);
  }, 480_000);
});
