// CPU seconds the OpenStack test bed spent: every process of the process groups its up.sh started
// (pid files under $KUPENSTACK_TESTBED_HOME/openstack/run): APIs, workers, MariaDB, RabbitMQ, memcached.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { testbedHome } from '../support/oci.ts';

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** Summed user + system CPU seconds of the test bed's OpenStack processes, now. */
export function openstackCpuSeconds(): number {
  const runDir = join(testbedHome, 'openstack', 'run');
  const groups = new Set(readdirSync(runDir).filter((f) => f.endsWith('.pid')).map((f) => readFileSync(join(runDir, f), 'utf8').trim()));
  if (groups.size === 0) throw new Error(`no OpenStack process group recorded in ${runDir}: is the test bed up (npm run testbed:up)?`);
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone since the listing
    }
    // Fields after "(comm) ": state ppid pgrp … utime (14th field) stime (15th).
    const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    if (groups.has(f[2]!)) ticks += Number(f[11]) + Number(f[12]);
  }
  return ticks / ticksPerSecond;
}
