import { Option } from 'commander';

export type OutputFormat = 'text' | 'json';

export function outputOption(formats: readonly string[] = ['text', 'json']): Option {
  return new Option('-o, --output <format>', 'output format').choices(formats).default('text');
}

/** Machine output is exactly one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
