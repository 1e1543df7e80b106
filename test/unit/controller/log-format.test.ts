import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Writable } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { loggerFrom, withLogOptions, type LogOptions } from '../../../agent/cli/log-options.ts';
import { defaultLogFormat, type LogFormat } from '../../../agent/telemetry/logger.ts';

const repo = join(import.meta.dirname, '../../..');
const secret = 'hunter2-s3cr3t-token';

/** What each part of the controller writes, through the one logger `kupenstack controller` builds: returns the lines. */
function controllerLines(format: LogFormat): string[] {
  let text = '';
  const out = new Writable({ write: (c: Buffer, _e, done) => ((text += c.toString()), done()) });
  const logger = loggerFrom({ logLevel: 'info', logFormat: format }, out);
  const log = (line: string): void => logger.info(line);
  // process.ts and the resource/cloud loops, leases, shards: plain lines.
  logger.info({ server: 'https://127.0.0.1:6443', cluster: 'inCluster' }, 'Kubernetes API https://127.0.0.1:6443 (cluster "inCluster")');
  log('reconciled team at 2026-01-01T00:00:00.000Z in 12 ms: 1 created, 0 updated, 0 deleted, 0 healed, 3 unchanged, 0 errors');
  log('leader  ctl-1 acquired lease kupenstack-system/kupenstack-controller');
  // The Sync loop and the hooks: fields, some holding credentials.
  logger.info({ sync: 'infra', revision: 'main@sha1:abc', trigger: 'webhook' }, 'applying revision');
  logger.warn({ provider: 'slack', token: secret, headers: { authorization: `Bearer ${secret}` }, git: { password: secret } }, 'notice not sent');
  logger.fatal({ err: new Error('the API server refused the watch') }, 'controller stopped: the API server refused the watch');
  return text.split('\n').filter((l) => l !== '');
}

describe('the controller logs in one format', () => {
  it('json: every line is one JSON object with level, time and msg, credentials blanked', () => {
    const lines = controllerLines('json');
    expect(lines).toHaveLength(6);
    for (const line of lines) {
      const o = JSON.parse(line) as Record<string, unknown>;
      expect(typeof o.level, line).toBe('number');
      expect(Number.isNaN(Date.parse(String(o.time))), line).toBe(false);
      expect(typeof o.msg, line).toBe('string');
    }
    expect(JSON.parse(lines[3]!)).toMatchObject({ sync: 'infra', trigger: 'webhook', msg: 'applying revision' });
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines[4]).toContain('[redacted]');
  });

  it('text: no line is JSON; each starts with the ISO time and the level, fields as key=value, credentials blanked', () => {
    const lines = controllerLines('text');
    expect(lines).toHaveLength(6);
    for (const line of lines) {
      expect(() => JSON.parse(line) as unknown, line).toThrow();
      expect(line, line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO |WARN |FATAL) \S/);
    }
    expect(lines[1]).toContain(' reconciled team at ');
    expect(lines[3]).toMatch(/applying revision {2}.*sync=infra .*trigger=webhook/);
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines[4]).toContain('token=[redacted]');
  });

  it('defaults to JSON when stderr is not a terminal (a pod), text at a terminal; --log-format and --log-level are parsed', () => {
    expect(defaultLogFormat({ isTTY: undefined })).toBe('json');
    expect(defaultLogFormat({ isTTY: true })).toBe('text');
    const parse = (args: string[]): LogOptions => withLogOptions(new Command('controller').exitOverride().configureOutput({ writeErr: () => undefined }), { format: 'json', shown: 'json' }).parse(args, { from: 'user' }).opts<LogOptions>();
    expect(parse([])).toEqual({ logLevel: 'info', logFormat: 'json' });
    expect(parse(['--log-format', 'text', '--log-level', 'warn'])).toEqual({ logLevel: 'warn', logFormat: 'text' });
    expect(() => parse(['--log-format', 'yaml'])).toThrow(/yaml/);
  });

  it('nothing the controller runs writes to stderr or stdout past the logger (only CLI commands print)', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name);
        if (e.isDirectory()) walk(path);
        else if (e.name.endsWith('.ts') && /process\.(stderr|stdout)\.write|console\.(log|error|warn|info)\(/.test(readFileSync(path, 'utf8'))) offenders.push(relative(repo, path));
      }
    };
    walk(join(repo, 'agent'));
    // The CLI's commands print their results; schema/generate.ts is the build-time generator.
    // The walk found the printers it allows (else it read nothing, and the check below proves nothing).
    expect(offenders).toContain('agent/schema/generate.ts');
    expect(offenders.filter((f) => !f.startsWith('agent/cli/') && f !== 'agent/schema/generate.ts')).toEqual([]);
  });

  // The process itself, up to "controller started": its API server is a closed loopback port (no peer: its watches fail and retry, and it starts all the same).
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'ks-logfmt-')), 'kubeconfig');
  writeFileSync(kubeconfig, JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'closed', cluster: { server: 'https://127.0.0.1:1' } }], contexts: [{ name: 'closed', context: { cluster: 'closed', user: 'u', namespace: 'ks-logfmt' } }], 'current-context': 'closed', users: [{ name: 'u', user: { token: secret } }] }));
  async function startedLines(format: LogFormat | undefined): Promise<string[]> {
    const child = spawn(process.execPath, [join(repo, 'agent/cli/main.ts'), 'controller', '--kubeconfig', kubeconfig, '--no-syncs', ...(format ? ['--log-format', format] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    try {
      await new Promise<void>((resolve, reject) => {
        child.stderr.on('data', (c: Buffer) => ((text += c.toString()), text.includes('controller started') && resolve()));
        child.stdout.on('data', (c: Buffer) => (text += c.toString()));
        child.once('exit', (code) => reject(new Error(`the controller exited (${code}) before it started:\n${text}`)));
      });
    } finally {
      child.kill('SIGKILL');
    }
    return text.split('\n').filter((l) => l !== '');
  }

  it('the real process: JSON by default on a pipe, every line one JSON object; text with --log-format text, no line JSON; the token never shown', async () => {
    const [json, text] = await Promise.all([startedLines(undefined), startedLines('text')]);
    expect(json.length).toBeGreaterThanOrEqual(3);
    for (const line of json) {
      const o = JSON.parse(line) as Record<string, unknown>;
      expect([typeof o.level, typeof o.time, typeof o.msg], line).toEqual(['number', 'string', 'string']);
    }
    expect(text.length).toBeGreaterThanOrEqual(3);
    for (const line of text) expect(() => JSON.parse(line) as unknown, line).toThrow();
    expect(text.some((l) => / INFO {2}controller started$/.test(l))).toBe(true);
    expect([...json, ...text].join('\n')).not.toContain(secret);
  }, 60_000);
});
