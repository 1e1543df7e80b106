#!/usr/bin/env -S node --max-semi-space-size=1 --heap-growing-percent=30
// The `kupenstack` command: a thin dispatcher; each subcommand lives in its own file.
// The flags bound memory (deploy/image/kupenstack says why; keep the two equal).
import { Command, CommanderError } from 'commander';
import { KupenstackError } from '../errors.ts';
import { wasLogged } from './logged-error.ts';
import { version } from '../version.ts';

/**
 * Each subcommand's module, loaded only when that command runs: the
 * Kubernetes client alone holds ~90 MB, which `validate` or `image export`
 * never use (`kupenstack image …` rests at ~110 MB instead of ~160).
 */
const commands: Record<string, () => Promise<Command>> = {
  validate: async () => (await import('./validate.ts')).validateCommand(),
  apply: async () => (await import('./apply.ts')).applyCommand(),
  plan: async () => (await import('./plan.ts')).planCommand(),
  export: async () => (await import('./export.ts')).exportCommand(),
  image: async () => (await import('./image.ts')).imageCommand(),
  agent: async () => (await import('./agent.ts')).agentCommand(),
  controller: async () => (await import('./controller.ts')).controllerCommand(),
  get: async () => (await import('./get.ts')).getCommand(),
  reconcile: async () => (await import('./reconcile.ts')).reconcileCommand(),
  suspend: async () => (await import('./suspend.ts')).suspendCommand(),
  resume: async () => (await import('./resume.ts')).resumeCommand(),
  tree: async () => (await import('./tree.ts')).treeCommand(),
  events: async () => (await import('./events.ts')).eventsCommand(),
};

/** The program with the subcommand `only` (what argv names), or with all of them (help, an unknown command). */
export async function buildProgram(only?: string): Promise<Command> {
  const program = new Command('kupenstack')
    .description('OpenStack as code: keep an OpenStack cloud and its resources equal to a Git repository')
    .version(version, '-v, --version', 'print the version')
    .showHelpAfterError()
    .exitOverride();
  for (const [name, load] of Object.entries(commands)) if (only === undefined || only === name) program.addCommand(await load());
  return program;
}

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
