import { pino, type Logger, type LevelWithSilent, type DestinationStream } from 'pino';

export type { Logger };
export type LogFormat = 'json' | 'pretty';

/** Anything that may hold a credential is blanked before a line is written, whatever logged it. */
const redact = [
  'password',
  'token',
  'secret',
  'authorization',
  'credentials',
  '*.password',
  '*.token',
  '*.secret',
  '*.authorization',
  '*.credentials',
  'headers["authorization"]',
  'headers["x-gitlab-token"]',
  'headers["x-hub-signature-256"]',
  'headers["x-gitea-signature"]',
];

/** Structured JSON lines (pino) on stdout; `pretty` is the same data as one readable line, for the demo and terminals. */
export function createLogger(level: LevelWithSilent = 'info', format: LogFormat = 'json', out: NodeJS.WritableStream = process.stdout): Logger {
  const options = { level, base: { app: 'kupenstack' }, redact: { paths: redact, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime };
  if (format === 'json') return pino(options, out as DestinationStream);
  return pino(options, { write: (line: string) => out.write(prettyLine(line)) });
}

const levels: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };

function prettyLine(line: string): string {
  const { time, level, msg, app: _app, pid: _pid, hostname: _host, ...rest } = JSON.parse(line) as Record<string, unknown>;
  const extras = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const clock = typeof time === 'string' ? time.slice(11, 19) : '';
  return `${clock} ${levels[Number(level)] ?? String(level)} ${String(msg)}${extras ? `  ${extras}` : ''}\n`;
}
