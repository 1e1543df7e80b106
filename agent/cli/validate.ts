import { relative, resolve, sep } from 'node:path';
import { Command } from 'commander';
import { formatDiagnostic } from '../diagnostic.ts';
import { UsageError } from '../errors.ts';
import { loadSchemaRegistry } from '../schema/registry.ts';
import { checkGitRevision } from '../validate/check-git.ts';
import { checkPath } from '../validate/check-path.ts';
import { checkTransitions } from '../validate/transitions.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';

interface ValidateOptions {
  output: OutputFormat;
  base?: string;
  repo: string;
}

/** `kupenstack validate [PATH] [--base REF]`: every error of a revision at once (and of its change since REF); exit 1 when there is any. */
export function validateCommand(): Command {
  return new Command('validate')
    .description('check manifests against the schemas and the rules between them (references, cycles, CIDRs); exit 1 on any error')
    .argument('[path]', 'a folder of manifests or one manifest file', '.')
    .option(
      '--base <ref>',
      'also check the changes since this Git revision (the one the cloud is at): an OpenStackCloud release change must be one step forward, alone, with no pinned images',
    )
    .option('--repo <dir>', 'with --base: the Git repository (default: the current folder)', '.')
    .addOption(outputOption())
    .action(async (path: string, opts: ValidateOptions) => {
      const registry = loadSchemaRegistry();
      let result;
      try {
        result = await checkPath(path, registry);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new UsageError(`${path}: no such file or folder`);
        throw err;
      }
      const { documents } = result;
      let diagnostics = result.diagnostics;
      if (opts.base !== undefined && diagnostics.length === 0) {
        const inRepo = relative(resolve(opts.repo), resolve(path)) || '.';
        if (inRepo.startsWith('..')) throw new UsageError(`${path} is outside the repository ${opts.repo}; pass --repo`);
        const base = await checkGitRevision(opts.repo, opts.base, inRepo.split(sep).join('/'), registry);
        diagnostics = checkTransitions(base.validated.manifests, result.validated.manifests, { label: result.label });
      }
      const valid = diagnostics.length === 0;
      if (opts.output === 'json') {
        printJson({
          valid,
          documents,
          errors: diagnostics.map(({ code, file, line, column, kind, name, path: p, message }) => ({ code, file, line, column, kind, name, path: p, message })),
        });
      } else {
        for (const d of diagnostics) process.stdout.write(`${formatDiagnostic(d)}\n`);
        process.stdout.write(
          valid ? `${documents} documents valid\n` : `${diagnostics.length} error${diagnostics.length === 1 ? '' : 's'} in ${documents} documents\n`,
        );
      }
      process.exitCode = valid ? 0 : 1;
    });
}
