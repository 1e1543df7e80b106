import { Option, type Command } from 'commander';
import { createLogger, logFormats, type LogFormat, type Logger } from '../telemetry/logger.ts';

/** The log flags `agent` and `controller` share. */
export interface LogOptions {
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  logFormat: LogFormat;
}

/** `--log-level` and `--log-format`; `fallback` is the format without the flag and how help shows it. */
export function withLogOptions(cmd: Command, fallback: { format: LogFormat; shown: string }): Command {
  return cmd
    .addOption(new Option('--log-level <level>', 'least level logged').choices(['trace', 'debug', 'info', 'warn', 'error']).default('info'))
    .addOption(
      new Option('--log-format <format>', 'json: one JSON object a line (level, time, msg, fields); text: one readable line (pretty: with a short clock)')
        .choices(logFormats)
        .default(fallback.format, fallback.shown),
    );
}

/** The one logger of the process, every part of it writing through it to `out`. */
export function loggerFrom(opts: LogOptions, out: NodeJS.WritableStream): Logger {
  return createLogger(opts.logLevel, opts.logFormat, out);
}
