import { pino, type Logger, type LevelWithSilent, type DestinationStream } from 'pino';

export type { Logger };
/** `json`: one JSON object a line (pino); `text`: one readable line; `pretty`: text with a short clock (the agent's name for it, the demo's). */
export type LogFormat = 'json' | 'text' | 'pretty';
export const logFormats: readonly LogFormat[] = ['json', 'text', 'pretty'];

/** In a pod stderr is a pipe read by a log collector: JSON there; text for a person at a terminal. */
export function defaultLogFormat(out: { isTTY?: boolean }): LogFormat {
  return out.isTTY === true ? 'text' : 'json';
}

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

/** Structured JSON lines (pino) on stdout; `text`/`pretty` are the same data as one readable line, for terminals and the demo. */
export function createLogger(level: LevelWithSilent = 'info', format: LogFormat = 'json', out: NodeJS.WritableStream = process.stdout): Logger {
  const options = { level, base: { app: 'kupenstack' }, redact: { paths: redact, censor: '[redacted]' }, timestamp: pino.stdTimeFunctions.isoTime };
  if (format === 'json') return pino(options, out as DestinationStream);
  return pino(options, { write: (line: string) => out.write(textLine(line, format === 'pretty')) });
}

const levels: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };

/** The text form of one pino line: the time (full ISO, or the clock alone for `pretty`), the level, the message, then the fields as key=value. */
function textLine(line: string, shortClock: boolean): string {
  const { time, level, msg, app: _app, pid: _pid, hostname: _host, ...rest } = JSON.parse(line) as Record<string, unknown>;
  const extras = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const clock = typeof time !== 'string' ? '' : shortClock ? time.slice(11, 19) : time;
  return `${clock} ${levels[Number(level)] ?? String(level)} ${String(msg)}${extras ? `  ${extras}` : ''}\n`;
}
