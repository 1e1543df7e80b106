import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What other GitOps tools judge objects with (test/testbed/health-tools): Debian's lua5.4 and the kstatus check. */
const cache = process.env.KUPENSTACK_TESTBED_CACHE ?? '/var/cache/kupenstack-testbed';
export const kstatusVersion = 'v0.37.2';
export const kstatusBin = join(cache, `kstatus-${kstatusVersion}`, 'bin', 'kstatus');
export const luaBin = '/usr/bin/lua5.4';
/** The chart's one Argo CD health script (every kupenstack.io kind). */
export const argocdHealthScript = join(import.meta.dirname, '../../../deploy/chart/kupenstack/files/argocd-health.lua');

/** A Lua string literal: bytes as they are, quotes, backslashes and control characters escaped. */
function luaString(s: string): string {
  const escaped = [...s].map((c) => {
    const code = c.charCodeAt(0);
    if (c === '\\' || c === '"') return `\\${c}`;
    // \ddd, three digits so that a digit after it is not read into it.
    return code < 32 || code === 127 ? `\\${code.toString().padStart(3, '0')}` : c;
  });
  return `"${escaped.join('')}"`;
}

/** A JSON value as a Lua table constructor, as Argo CD hands `obj` to the script: arrays 1-based, null fields absent. */
export function luaLiteral(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (typeof v === 'string') return luaString(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `{${v.map(luaLiteral).join(', ')}}`;
  const fields = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== null && x !== undefined);
  return `{${fields.map(([k, x]) => `[${luaString(k)}] = ${luaLiteral(x)}`).join(', ')}}`;
}

export interface ArgoHealth {
  status: string;
  message: string;
}

/** Argo CD's verdict on one object: the chart's script run by a real Lua interpreter with `obj` set, as Argo CD runs it. */
export function argocdHealth(object: unknown): ArgoHealth {
  const dir = mkdtempSync(join(tmpdir(), 'ks-argocd-health-'));
  try {
    const driver = join(dir, 'run.lua');
    writeFileSync(driver, `obj = ${luaLiteral(object)}\nlocal hs = dofile(${luaString(argocdHealthScript)})\nio.write(hs.status, "\\n", hs.message or "")\n`);
    const r = spawnSync(luaBin, [driver], { encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) throw new Error(`lua5.4 failed (${r.status ?? r.signal}): ${r.stderr}`);
    const [status = '', ...message] = r.stdout.split('\n');
    return { status, message: message.join('\n') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The kstatus check, built: under the suite's global setup a cold build runs in the background
 * (health-tools/up.sh); build.sh waits for it (its lock), or builds. Throws when it cannot.
 */
export function ensureKstatus(): void {
  const r = spawnSync('bash', [join(import.meta.dirname, 'build.sh')], { encoding: 'utf8', timeout: 30 * 60_000 });
  if (r.status !== 0) throw new Error(`test/testbed/health-tools/build.sh failed (${r.status ?? r.signal}): ${r.stderr}${r.stdout}`);
}

/** Flux's kstatus verdicts (Current, InProgress, Failed, Terminating…) on the objects, by the library itself. */
export function kstatus(objects: unknown[]): { status: string; message: string }[] {
  const r = spawnSync(kstatusBin, [], { encoding: 'utf8', input: JSON.stringify(objects), timeout: 30_000 });
  if (r.status !== 0) throw new Error(`${kstatusBin} failed (${r.status ?? r.signal}): ${r.stderr} (bash test/testbed/health-tools/up.sh builds it)`);
  return JSON.parse(r.stdout) as { status: string; message: string }[];
}
