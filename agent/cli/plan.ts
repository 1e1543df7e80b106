import { Command } from 'commander';
import { applyPath } from '../act/apply.ts';
import { formatDiagnostic } from '../diagnostic.ts';
import { planFromReport } from '../plan/from-report.ts';
import { renderJson } from '../plan/render/json.ts';
import { renderMarkdown } from '../plan/render/markdown.ts';
import { renderText } from '../plan/render/text.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { outputOption } from './output.ts';

interface PlanOptions extends CloudOptions {
  prune: boolean;
  output: 'text' | 'markdown' | 'json';
}

/**
 * `kupenstack plan [PATH] --cloud NAME`: what `apply` would change in the live
 * cloud, changing nothing. Exit 0 no changes, 2 changes, 1 error (like
 * `terraform plan -detailed-exitcode`).
 */
export function planCommand(): Command {
  return withCloudOptions(
    new Command('plan')
      .description('show what apply would change in the live cloud (nothing is changed); exit 0 no changes, 2 changes, 1 error')
      .argument('[path]', 'a folder of manifests or one manifest file', '.'),
  )
    .option('--prune', 'include the deletions apply --prune would make', false)
    .addOption(outputOption(['text', 'markdown', 'json']))
    .action(async (path: string, opts: PlanOptions) => {
      const { config, cloud, cloudsFile } = resolveCloud(opts);
      const outcome = await applyPath({ path, cloud, cloudsFile, config, prune: opts.prune, allowMassDelete: false, dryRun: true, log: () => undefined });
      if (outcome.diagnostics.length > 0) {
        for (const d of outcome.diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
        process.stderr.write(`${outcome.diagnostics.length} validation errors: no plan\n`);
        process.exitCode = 1;
        return;
      }
      const report = outcome.report!;
      const plan = planFromReport(report, `cloud ${cloud}`);
      const rendered = opts.output === 'json' ? renderJson(plan) : opts.output === 'markdown' ? renderMarkdown(plan, {}) : renderText(plan, { color: process.stdout.isTTY === true && !process.env.NO_COLOR });
      process.stdout.write(rendered.endsWith('\n') ? rendered : `${rendered}\n`);
      if (report.errors.length > 0) {
        for (const e of report.errors) process.stderr.write(`error: ${e.message}\n`);
        process.exitCode = 1;
        return;
      }
      const changed = plan.changes.length > 0 || plan.held.length > 0;
      process.exitCode = changed ? 2 : 0;
    });
}
