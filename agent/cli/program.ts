import { Command } from 'commander';
import { version } from '../version.ts';

/**
 * Each subcommand's module, loaded only when that command runs: the
 * Kubernetes client alone holds ~90 MB, which `validate` or `image export`
 * never use (`kupenstack image …` rests at ~110 MB instead of ~160).
 */
export const commands: Record<string, () => Promise<Command>> = {
  validate: async () => (await import('./validate.ts')).validateCommand(),
  apply: async () => (await import('./apply.ts')).applyCommand(),
  plan: async () => (await import('./plan.ts')).planCommand(),
  export: async () => (await import('./export.ts')).exportCommand(),
  image: async () => (await import('./image.ts')).imageCommand(),
  push: async () => (await import('./push.ts')).pushCommand(),
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
