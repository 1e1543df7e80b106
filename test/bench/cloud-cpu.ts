// CPU seconds the OpenStack test bed spent: every process of the process groups its up.sh started
// (pid files under $KUPENSTACK_TESTBED_HOME/openstack/run, one per service): APIs, workers, MariaDB, RabbitMQ, memcached.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testbedHome } from '../support/oci.ts';

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** User + system CPU seconds of the test bed's OpenStack processes now, per service (the pid file's name: keystone, neutron-server, mariadb…). */
export function openstackCpuByService(): Map<string, number> {
  const runDir = join(testbedHome, 'openstack', 'run');
  const serviceOf = new Map(readdirSync(runDir).filter((f) => f.endsWith('.pid')).map((f) => [readFileSync(join(runDir, f), 'utf8').trim(), f.slice(0, -'.pid'.length)]));
  if (serviceOf.size === 0) throw new Error(`no OpenStack process group recorded in ${runDir}: is the test bed up (npm run testbed:up)?`);
  const ticks = new Map<string, number>();
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone since the listing
    }
    // Fields after "(comm) ": state ppid pgrp … utime (14th field) stime (15th).
    const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    const service = serviceOf.get(f[2]!);
    if (service) ticks.set(service, (ticks.get(service) ?? 0) + Number(f[11]) + Number(f[12]));
  }
  return new Map([...serviceOf.values()].sort().map((s) => [s, (ticks.get(s) ?? 0) / ticksPerSecond]));
}

/** Summed user + system CPU seconds of the test bed's OpenStack processes, now. */
export function openstackCpuSeconds(): number {
  return [...openstackCpuByService().values()].reduce((a, b) => a + b, 0);
}

/** What each service spent between two readings of openstackCpuByService. */
export function cpuSpent(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Map<string, number> {
  return new Map([...after].map(([s, t]) => [s, t - (before.get(s) ?? 0)]));
}
