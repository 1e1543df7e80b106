import { Option } from 'commander';

export type OutputFormat = 'text' | 'json';

export function outputOption(formats: readonly string[] = ['text', 'json']): Option {
  return new Option('-o, --output <format>', 'output format').choices(formats).default('text');
}

/** Machine output is exactly one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** kubectl's table: columns three spaces apart, the last one not padded. */
export function columns(head: readonly string[], cells: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]): string =>
    c
      .map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]! + 3)))
      .join('')
      .trimEnd();
  return `${[head, ...cells].map(line).join('\n')}\n`;
}
