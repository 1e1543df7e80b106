import { Command } from 'commander';
import { formatDiagnostic } from '../diagnostic.ts';
import { UsageError } from '../errors.ts';
import { loadSchemaRegistry } from '../schema/registry.ts';
import { checkPath } from '../validate/check-path.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';

interface ValidateOptions {
  output: OutputFormat;
}

/** `kupenstack validate [PATH]`: every error of a revision at once; exit 1 when there is any. */
export function validateCommand(): Command {
  return new Command('validate')
    .description('check manifests against the schemas and the rules between them (references, cycles, CIDRs); exit 1 on any error')
    .argument('[path]', 'a folder of manifests or one manifest file', '.')
    .addOption(outputOption())
    .action(async (path: string, opts: ValidateOptions) => {
      let result;
      try {
        result = await checkPath(path, loadSchemaRegistry());
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new UsageError(`${path}: no such file or folder`);
        throw err;
      }
      const { documents, diagnostics } = result;
      const valid = diagnostics.length === 0;
      if (opts.output === 'json') {
        printJson({
          valid,
          documents,
          errors: diagnostics.map(({ code, file, line, column, kind, name, path: p, message }) => ({ code, file, line, column, kind, name, path: p, message })),
        });
      } else {
        for (const d of diagnostics) process.stdout.write(`${formatDiagnostic(d)}\n`);
        process.stdout.write(valid ? `${documents} documents valid\n` : `${diagnostics.length} error${diagnostics.length === 1 ? '' : 's'} in ${documents} documents\n`);
      }
      process.exitCode = valid ? 0 : 1;
    });
}
