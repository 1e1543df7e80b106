// Where a window's CPU went on the whole machine, by component: the ORC bench's first applies are bound by the
// test bed's two cores (OpenStack, the API server and both controllers share them), so a side's time to Ready is
// read beside the CPU every component spent meanwhile. From /proc, no tool: each process's user + system ticks at
// the window's start and end; a process born inside the window counts from zero; what processes that came and went
// inside the window spent (kubectl's polls) is the machine's busy time (/proc/stat) less the rest.
import { readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/** Clock ticks per second of /proc's CPU times. */
export const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

interface Proc {
  comm: string;
  ticks: number;
}

export interface CpuSnapshot {
  procs: Map<number, Proc>;
  /** The machine's busy ticks (every CPU: user, nice, system, irq, softirq, steal). */
  busy: number;
}

/** Every process's name and CPU ticks now, by PID, and the machine's busy ticks. */
export function cpuSnapshot(): CpuSnapshot {
  const out = new Map<number, Proc>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const close = stat.lastIndexOf(') ');
    const f = stat.slice(close + 2).split(' ');
    out.set(Number(entry), { comm: stat.slice(stat.indexOf('(') + 1, close), ticks: Number(f[11]) + Number(f[12]) });
  }
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  return { procs: out, busy: user! + nice! + system! + irq! + softirq! + steal! };
}

/** The component a process belongs to, by name (`pids` names the ones the caller knows better, e.g. a controller). */
export function componentOf(comm: string): string {
  if (comm.startsWith('neutron-server')) return 'Neutron API';
  if (comm.startsWith('nova-api')) return 'Nova API';
  if (comm === 'uwsgi') return 'Keystone';
  if (comm === 'mariadbd' || comm === 'mysqld') return 'MariaDB';
  if (comm === 'kube-apiserver') return 'kube-apiserver';
  if (comm === 'etcd') return 'etcd';
  if (comm === 'kubectl') return 'kubectl (the apply, the bench\'s polls)';
  if (comm.startsWith('neutron-') || comm.startsWith('nova-') || comm === 'beam.smp' || comm === 'memcached') return 'OpenStack agents, RabbitMQ, memcached';
  return 'other';
}

/** CPU-seconds per component between two snapshots, largest first; `named` puts given PIDs under a name of their own. */
export function cpuByComponent(a: CpuSnapshot, b: CpuSnapshot, named: Map<number, string> = new Map()): [string, number][] {
  const sums = new Map<string, number>();
  for (const [pid, p] of b.procs) {
    const before = a.procs.get(pid);
    const ticks = before && before.comm === p.comm ? p.ticks - before.ticks : p.ticks;
    if (ticks <= 0) continue;
    const name = named.get(pid) ?? componentOf(p.comm);
    sums.set(name, (sums.get(name) ?? 0) + ticks / ticksPerSecond);
  }
  const seen = [...sums.values()].reduce((s, v) => s + v, 0);
  const gone = (b.busy - a.busy) / ticksPerSecond - seen;
  if (gone > 0) sums.set('processes gone by the end (kubectl)', gone);
  return [...sums].sort((x, y) => y[1] - x[1]);
}

/** `Neutron API 24.1, kube-apiserver 11.3, …; machine 63.0 of 80.0 CPU-s (2 cores × 40.0 s)`. */
export function describeCpu(parts: [string, number][], seconds: number, cores: number): string {
  const total = parts.reduce((s, [, v]) => s + v, 0);
  const shown = parts.filter(([, v]) => v >= 0.5).map(([n, v]) => `${n} ${v.toFixed(1)}`);
  return `${shown.join(', ')}; machine ${total.toFixed(1)} of ${(cores * seconds).toFixed(1)} CPU-s (${cores} cores × ${seconds.toFixed(1)} s)`;
}
