import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * The test bed's process bookkeeping (test/testbed/lib.sh): a pid file names a process only as long
 * as that PID is not reused. PIDs wrap within a boot on this machine kind (pid_max 32768), and a CI
 * run once lost kwok to the charts peer stopping "its" nginx from a stale pid file.
 */
const lib = join(import.meta.dirname, '../testbed/lib.sh');
let home: string;
const spawned: ChildProcess[] = [];

function sh(script: string): { code: number; out: string; err: string } {
  const r = spawnSync('bash', ['-c', `set -euo pipefail; . "${lib}"; tb_dirs demo; ${script}`], {
    env: { ...process.env, KUPENSTACK_TESTBED_HOME: home, TB_LOCKED: '' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status ?? -1, out: r.stdout.trim(), err: r.stderr };
}

/** A process group this test owns (its leader is the returned child), standing for a foreign process. */
function foreignLeader(): ChildProcess {
  const child = spawn('sleep', ['120'], { detached: true, stdio: 'ignore' });
  spawned.push(child);
  return child;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    // A killed child stays a zombie until we reap it: that is dead too.
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};
const run = (f: string): string => join(home, 'demo/run', f);

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'ks-tblib-'));
  mkdirSync(join(home, 'demo/run'), { recursive: true });
});
afterEach(() => {
  for (const c of spawned.splice(0)) if (c.pid !== undefined && alive(c.pid)) process.kill(-c.pid, 'SIGKILL');
  // Whatever tb_start started in this test: stop it through the library, which only kills its own groups.
  sh('for f in "$RUN_DIR"/*.pid; do [ -e "$f" ] && tb_stop "$(basename "$f" .pid)"; done; true');
  rmSync(home, { recursive: true, force: true });
});

describe('test-bed pid files', () => {
  it('tb_start records the process and its identity; tb_pid finds it; tb_stop ends its group', () => {
    const started = sh('tb_start svc sleep 120; sleep 0.2; tb_pid svc');
    expect(started.code, started.err).toBe(0);
    const pid = Number(started.out);
    expect(alive(pid)).toBe(true);
    expect(readFileSync(run('svc.pid'), 'utf8').trim()).toBe(String(pid));
    const [boot, ticks] = readFileSync(run('svc.started'), 'utf8').trim().split(' ');
    expect(boot).toBe(readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
    expect(Number(ticks)).toBeGreaterThan(0);

    const stopped = sh('tb_stop svc');
    expect(stopped.code, stopped.err).toBe(0);
    expect(stopped.err).toContain(`stopping svc (process group ${pid})`);
    expect(existsSync(run('svc.pid'))).toBe(false);
    expect(existsSync(run('svc.started'))).toBe(false);
  });

  it('a pid file whose PID another process now leads is stale: tb_pid refuses it, tb_stop kills nothing, tb_start starts anew', () => {
    const foreign = foreignLeader();
    const pid = foreign.pid!;
    writeFileSync(run('svc.pid'), `${pid}\n`);
    // What tb_start wrote for the process that had this PID in an earlier run: same boot, earlier start.
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    writeFileSync(run('svc.started'), `${boot} 1\n`);

    expect(sh('tb_pid svc').code).toBe(1);
    const stopped = sh('tb_stop svc');
    expect(stopped.code, stopped.err).toBe(0);
    expect(stopped.err).toContain(`names pid ${pid}, which this test bed did not start`);
    expect(alive(pid)).toBe(true);
    expect(existsSync(run('svc.pid'))).toBe(false);

    writeFileSync(run('svc.pid'), `${pid}\n`);
    const restarted = sh('tb_start svc sleep 120; sleep 0.2; tb_pid svc');
    expect(restarted.code, restarted.err).toBe(0);
    expect(Number(restarted.out)).not.toBe(pid);
    expect(alive(pid)).toBe(true);
  });

  it('a pid file from before identities were recorded names nothing', () => {
    const foreign = foreignLeader();
    writeFileSync(run('old.pid'), `${foreign.pid!}\n`);
    expect(sh('tb_pid old').code).toBe(1);
    expect(sh('tb_stop old').code).toBe(0);
    expect(alive(foreign.pid!)).toBe(true);
  });

  it("one service's stale pid file naming another service's reused PID stops nothing (the CI run that lost kwok)", () => {
    const kwok = sh('tb_start kwok sleep 120; sleep 0.2; tb_pid kwok');
    expect(kwok.code, kwok.err).toBe(0);
    const pid = Number(kwok.out);
    // nginx ran under this PID in an earlier run; its pid file and identity were left behind.
    writeFileSync(run('nginx.pid'), `${pid}\n`);
    writeFileSync(run('nginx.started'), `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()} 1\n`);

    // charts/up.sh: nginx is not ours-and-listening, so it stops "nginx" before starting one.
    expect(sh('tb_pid nginx').code).toBe(1);
    const charts = sh('tb_stop nginx');
    expect(charts.code, charts.err).toBe(0);
    expect(alive(pid)).toBe(true);
    expect(sh('tb_pid kwok').out).toBe(String(pid));
  });

  it('a group whose leader exited is still stopped in the boot it was started in', () => {
    // The leader (bash) exits at once; its child sleep keeps the group alive, as a daemon's workers do.
    const started = sh(`tb_start svc bash -c 'sleep 120 & exit 0'; sleep 0.5; cat "$RUN_DIR/svc.pid"`);
    expect(started.code, started.err).toBe(0);
    const pgid = Number(started.out);
    const members = (): string => spawnSync('ps', ['-o', 'pid=', '-g', String(pgid)], { encoding: 'utf8' }).stdout.trim();
    expect(members()).not.toBe('');
    expect(sh('tb_pid svc').code).toBe(1);
    const stopped = sh('tb_stop svc');
    expect(stopped.err).toContain(`stopping svc (process group ${pgid})`);
    expect(members()).toBe('');
  });
});
