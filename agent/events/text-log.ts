import type { EngineEvent, EventSink } from './events.ts';

/**
 * The engine's events as the log lines the CLI has always printed
 * (`create  ns/Kind/name`, `error   ns/Kind/name: …`). Events without a
 * line of their own (drift, adoption) print nothing.
 */
export function textLogSink(log: (line: string) => void): EventSink {
  return (e) => {
    const line = textLine(e);
    if (line !== undefined) log(line);
  };
}

export function textLine(e: EngineEvent): string | undefined {
  switch (e.type) {
    case 'created':
      return `create  ${e.address}`;
    case 'updated':
      return `update  ${e.address}: ${e.message}`;
    case 'replaced':
      return `replace ${e.address} (deleting ${e.id ?? '?'})`;
    case 'deleted':
      return `delete  ${e.address} (${e.id ?? '?'})`;
    case 'healed':
      return `heal    ${e.address}: ${e.message}`;
    case 'retrying':
      return e.address ? `retry   ${e.address} after ${e.message}` : `retry   after ${e.message}`;
    case 'held':
      return `held    ${e.message}`;
    case 'failed':
    case 'gave-up':
      return `error   ${e.address}: ${e.message}`;
    default:
      return undefined;
  }
}
