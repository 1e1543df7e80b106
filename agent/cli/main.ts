#!/usr/bin/env -S node --max-semi-space-size=1 --heap-growing-percent=30
// The `kupenstack` command: a thin dispatcher; each subcommand lives in its own file.
// The flags bound memory (deploy/image/kupenstack says why; keep the two equal).
import { CommanderError } from 'commander';
import { KupenstackError } from '../errors.ts';
import { wasLogged } from './logged-error.ts';
import { buildProgram, commands } from './program.ts';

export async function main(argv: string[]): Promise<number> {
  const first = argv.find((a) => !a.startsWith('-'));
  const program = await buildProgram(first !== undefined && Object.hasOwn(commands, first) ? first : undefined);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0.
      return err.exitCode;
    }
    // Already the log's last line, in its format: exit as a crash would, with open watches and servers left behind.
    if (wasLogged(err)) process.exit(1);
    if (err instanceof KupenstackError) {
      process.stderr.write(`kupenstack: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
