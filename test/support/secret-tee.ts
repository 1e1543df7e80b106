import childProcess from 'node:child_process';
import { appendFileSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { afterEach } from 'vitest';
import { cloudsCredentials } from './secret-scan.ts';

/**
 * A setup file of every test project (issue 16 item 4): tees what the tests
 * and the processes they start write — console output, every child's stdout
 * and stderr, the errors of failed tests, and after each test the output
 * files (state, status, plans, logs, metrics) left in the run's own TMPDIR —
 * into KS_SECRET_TEE_DIR, which test/support/secret-scan-setup.ts scans for
 * credentials when the run ends. Bounded: at most `maxBytes` per worker.
 */
const dir = process.env.KS_SECRET_TEE_DIR;
const runTmp = process.env.KS_SECRET_RUN_TMP;
const maxBytes = 256 * 1024 * 1024;
let written = 0;

function append(file: string, data: string | Buffer): void {
  if (!dir || written > maxBytes) return;
  written += data.length;
  appendFileSync(join(dir, file), data);
}

if (dir) {
  mkdirSync(dir, { recursive: true });
  const consoleFile = `console-${process.pid}.log`;
  for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[level].bind(console);
    console[level] = (...args: unknown[]): void => {
      append(consoleFile, `${args.map((a) => (typeof a === 'string' ? a : a instanceof Error ? `${a.message}\n${a.stack ?? ''}` : safeJson(a))).join(' ')}\n`);
      original(...args);
    };
  }

  // Children: their output is teed by listening to the same 'data' events the test gets (no change to flowing mode).
  const childFile = `children-${process.pid}.log`;
  const tap = (stream: Readable | null | undefined): void => {
    if (!stream) return;
    const emit = stream.emit.bind(stream);
    stream.emit = ((event: string | symbol, ...args: unknown[]): boolean => {
      if (event === 'data' && (typeof args[0] === 'string' || Buffer.isBuffer(args[0]))) append(childFile, args[0]);
      return emit(event, ...args);
    }) as typeof stream.emit;
  };
  /**
   * `kubectl create token` prints a ServiceAccount token on stdout by design (a
   * test's credential input, like a clouds.yaml): its stdout is not teed but
   * harvested as a credential, so the token found anywhere else is a hit.
   */
  const asksForToken = (args: unknown[]): boolean => typeof args[0] === 'string' && /(^|\/)kubectl$/.test(args[0]) && Array.isArray(args[1]) && args[1].includes('create') && args[1].includes('token');
  const harvest = (stream: Readable | null | undefined): void => {
    let out = '';
    stream?.on('data', (d: string | Buffer) => void (out += d.toString()));
    stream?.on('end', () => {
      const value = out.trim();
      if (value) append(`credentials-${process.pid}.txt`, `${JSON.stringify({ label: 'a ServiceAccount token a test asked kubectl for', value })}\n`);
    });
  };
  const cp = childProcess as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of ['spawn', 'execFile', 'exec', 'fork'] as const) {
    const original = cp[name]!;
    const wrapped = (...args: unknown[]): unknown => {
      const child = original(...args) as childProcess.ChildProcess;
      if (asksForToken(args)) harvest(child.stdout);
      else tap(child.stdout);
      tap(child.stderr);
      return child;
    };
    // promisify(execFile) resolves { stdout, stderr } through this symbol: keep it, teeing its child too.
    const custom = (original as unknown as Record<symbol, ((...a: unknown[]) => Promise<unknown> & { child?: childProcess.ChildProcess }) | undefined>)[promisify.custom];
    if (custom) {
      Object.defineProperty(wrapped, promisify.custom, {
        value: (...args: unknown[]) => {
          const p = custom(...args);
          tap(p.child?.stdout);
          tap(p.child?.stderr);
          return p;
        },
      });
    }
    cp[name] = wrapped;
  }
  for (const name of ['spawnSync', 'execFileSync', 'execSync'] as const) {
    const original = cp[name]!;
    cp[name] = (...args: unknown[]): unknown => {
      const out = original(...args);
      if (asksForToken(args)) {
        const stdout = typeof out === 'string' || Buffer.isBuffer(out) ? out : out && typeof out === 'object' ? (out as Record<string, unknown>).stdout : undefined;
        const value = typeof stdout === 'string' || Buffer.isBuffer(stdout) ? stdout.toString().trim() : '';
        if (value) append(`credentials-${process.pid}.txt`, `${JSON.stringify({ label: 'a ServiceAccount token a test asked kubectl for', value })}\n`);
        return out;
      }
      if (typeof out === 'string' || Buffer.isBuffer(out)) append(childFile, out);
      else if (out && typeof out === 'object') for (const k of ['stdout', 'stderr'] as const) {
        const v = (out as Record<string, unknown>)[k];
        if (typeof v === 'string' || Buffer.isBuffer(v)) append(childFile, v);
      }
      return out;
    };
  }
  // ESM imports of node:child_process see the wrapped functions too.
  syncBuiltinESMExports();

  const copied = new Map<string, number>();
  afterEach((ctx) => {
    for (const e of ctx.task.result?.errors ?? []) append(`errors-${process.pid}.log`, `${ctx.task.name}: ${e.message ?? ''}\n${e.stack ?? ''}\n`);
    if (runTmp) snapshot(runTmp, copied);
  });
}

/** Output files in the run's TMPDIR, copied before the tests' own cleanup deletes them; credentials of clouds files written there are harvested. */
function snapshot(root: string, copied: Map<string, number>): void {
  const walk = (path: string): void => {
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) {
      const full = join(path, name);
      if (full === dir || name === '.git' || name === 'node_modules') continue;
      let st;
      // lstat: a link is not followed (a test's `a -> .` would make the walk endless); what it points at inside the TMPDIR is walked anyway.
      try {
        st = lstatSync(full);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(full);
      else if (st.isFile() && copied.get(full) !== st.mtimeMs) {
        copied.set(full, st.mtimeMs);
        if (/(^|\/)(clouds|secure)\.yaml$/.test(full)) {
          for (const c of cloudsCredentials(full)) append(`credentials-${process.pid}.txt`, `${JSON.stringify({ label: `a test's ${c.label.slice(c.label.lastIndexOf(' ') + 1)} (${relative(root, full)})`, value: c.value })}\n`);
        } else if (/\.(json|log|txt|prom|out|err|ndjson)$/.test(name) && st.size < 8 * 1024 * 1024 && written < maxBytes) {
          const target = join(dir!, 'files', relative(root, full).replace(/\//g, '__'));
          mkdirSync(join(dir!, 'files'), { recursive: true });
          try {
            copyFileSync(full, `${target}.${Math.round(st.mtimeMs)}`);
            written += st.size;
          } catch {
            // Deleted between stat and copy.
          }
        }
      }
    }
  };
  if (existsSync(root)) walk(root);
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
