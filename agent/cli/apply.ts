import { Command } from 'commander';
import { formatDiagnostic } from '../diagnostic.ts';
import { applyPath } from '../act/apply.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';

interface ApplyOptions extends CloudOptions {
  prune: boolean;
  allowMassDelete: boolean;
  output: OutputFormat;
}

/** `kupenstack apply [PATH]`: validate, then make the cloud equal to PATH. Exit 0 when converged, 1 otherwise. */
export function applyCommand(): Command {
  return withCloudOptions(
    new Command('apply')
      .description('validate PATH and make the OpenStack cloud equal to it: create, update, heal and (with --prune) delete what this owner created')
      .argument('[path]', 'a folder of manifests or one manifest file', '.'),
  )
    .option('--prune', 'delete objects this owner created that are no longer declared', false)
    .option('--allow-mass-delete', 'apply a revision that deletes more than the configured share of the owned objects', false)
    .addOption(outputOption())
    .action(async (path: string, opts: ApplyOptions) => {
      const { config, cloud, cloudsFile } = resolveCloud(opts);
      const controller = new AbortController();
      const stop = (): void => controller.abort(new Error('interrupted'));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      const outcome = await applyPath({
        path,
        cloud,
        cloudsFile,
        config,
        prune: opts.prune,
        allowMassDelete: opts.allowMassDelete,
        log: (line) => process.stderr.write(`${line}\n`),
        signal: controller.signal,
      });
      if (outcome.diagnostics.length > 0) {
        for (const d of outcome.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
        process.stderr.write(`${outcome.diagnostics.length} validation errors: nothing was applied\n`);
        if (opts.output === 'json') printJson({ revision: null, created: 0, updated: 0, replaced: 0, deleted: 0, healed: 0, unchanged: 0, held: [], errors: outcome.diagnostics.map((d) => ({ address: `${d.file}:${d.line}:${d.column}`, code: d.code, message: d.message })), apiCalls: { read: 0, write: 0 } });
        process.exitCode = 1;
        return;
      }
      const r = outcome.report!;
      if (opts.output === 'json') {
        printJson({ revision: r.revision, created: r.created, updated: r.updated, replaced: r.replaced, deleted: r.deleted, healed: r.healed, unchanged: r.unchanged, held: r.held, errors: r.errors, apiCalls: r.apiCalls });
      } else {
        for (const w of r.warnings) process.stdout.write(`warning: ${w}\n`);
        for (const h of r.held) process.stdout.write(`held: delete ${h.address}: ${h.reason}\n`);
        for (const e of r.errors) process.stdout.write(`error: ${e.message}${e.requestId ? ` [${e.requestId}]` : ''}\n`);
        process.stdout.write(
          `${r.revision}: ${r.created} created, ${r.updated} updated, ${r.replaced} replaced, ${r.deleted} deleted, ${r.healed} healed, ${r.unchanged} unchanged; ${r.errors.length} errors; API calls: ${r.apiCalls.read} read, ${r.apiCalls.write} write\n`,
        );
      }
      process.exitCode = r.errors.length === 0 && r.held.length === 0 ? 0 : 1;
    });
}
