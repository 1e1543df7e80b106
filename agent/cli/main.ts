#!/usr/bin/env -S node --max-semi-space-size=1 --heap-growing-percent=30
// The `kupenstack` command: a thin dispatcher; each subcommand lives in its own file.
// The flags bound memory (deploy/image/kupenstack says why; keep the two equal).
import { Command, CommanderError } from 'commander';
import { KupenstackError } from '../errors.ts';
import { version } from '../version.ts';
import { agentCommand } from './agent.ts';
import { applyCommand } from './apply.ts';
import { controllerCommand } from './controller.ts';
import { imageCommand } from './image.ts';
import { planCommand } from './plan.ts';
import { validateCommand } from './validate.ts';

export function buildProgram(): Command {
  const program = new Command('kupenstack')
    .description('OpenStack as code: keep an OpenStack cloud and its resources equal to a Git repository')
    .version(version, '-v, --version', 'print the version')
    .showHelpAfterError()
    .exitOverride();
  program.addCommand(validateCommand());
  program.addCommand(applyCommand());
  program.addCommand(planCommand());
  program.addCommand(imageCommand());
  program.addCommand(agentCommand());
  program.addCommand(controllerCommand());
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0.
      return err.exitCode;
    }
    if (err instanceof KupenstackError) {
      process.stderr.write(`kupenstack: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
