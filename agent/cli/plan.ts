import { resolve } from 'node:path';
import { Command } from 'commander';
import { planPath } from '../standalone/apply-path.ts';
import { secretsDirOf } from '../config/config.ts';
import { loadConfig } from '../sync/config-file.ts';
import { formatDiagnostic, type Diagnostic } from '../diagnostic.ts';
import { UsageError } from '../errors.ts';
import { adapters } from '../kinds/registry.ts';
import { planBetweenRevisions } from '../plan/between-revisions.ts';
import type { Plan } from '../plan/plan.ts';
import { jsonPlan, renderJson } from '../plan/render/json.ts';
import { renderMarkdown } from '../plan/render/markdown.ts';
import { renderText } from '../plan/render/text.ts';
import { writeSavedPlan } from '../plan/saved.ts';
import { loadSchemaRegistry } from '../schema/registry.ts';
import { checkGitRevision } from '../validate/check-git.ts';
import { checkTransitions } from '../validate/transitions.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { outputOption } from './output.ts';
import { EnvFileSecretResolver } from '../secrets/env-file.ts';
import { checkPath } from '../validate/check-path.ts';
import { withCloudStepOptions } from './cloud-step.ts';
import { cloudManifest, planCloudBetweenRevisions, planRevisionCloud, type CloudStepOptions } from '../standalone/revision-cloud.ts';
import { stableJson } from '../ownership/marker.ts';

interface PlanOptions extends CloudOptions, CloudStepOptions {
  prune: boolean;
  output: 'text' | 'markdown' | 'json';
  base?: string;
  head: string;
  repo: string;
  save?: string;
}

/**
 * `kupenstack plan [PATH] --cloud NAME`: what `apply` would change in the live
 * cloud, changing nothing. `--base REF [--head REF]`: the same between two Git
 * revisions, with no cloud and no credentials (pull requests from forks).
 * Exit 0 no changes, 2 changes, 1 error (like `terraform plan -detailed-exitcode`).
 */
export function planCommand(): Command {
  return withCloudStepOptions(
    withCloudOptions(
      new Command('plan')
        .description(
          'show what apply would change (nothing is changed): against the live cloud (--cloud), or between two Git revisions without any cloud (--base); exit 0 no changes, 2 changes, 1 error',
        )
        .argument('[path]', 'a folder of manifests or one manifest file (with --base: a path inside the repository)', '.'),
    ),
  )
    .option('--prune', 'include the deletions of objects no longer declared (what a pruning Sync or apply --prune does)', false)
    .option('--base <ref>', 'plan between Git revisions: the revision the cloud is at (branch, tag, remote ref or commit); needs no cloud credentials')
    .option('--head <ref>', 'with --base: the revision to plan (default HEAD)', 'HEAD')
    .option('--repo <dir>', 'with --base: the Git repository (default: the current folder)', '.')
    .option('--save <file>', 'live plan only: save the plan for apply --plan FILE, which refuses it once the cloud or the manifests change')
    .addOption(outputOption(['text', 'markdown', 'json']))
    .action(async (path: string, opts: PlanOptions) => {
      if (opts.base !== undefined) return planRevisions(path, opts);
      const { config, cloud, cloudsFile } = resolveCloud(opts);
      const outcome = await planPath({
        path,
        cloud,
        cloudsFile,
        config,
        prune: opts.prune,
        allowMassDelete: false,
        log: () => undefined,
        secrets: new EnvFileSecretResolver({ secretsDir: secretsDirOf(config) }),
      });
      if (outcome.diagnostics.length > 0) return invalid(outcome.diagnostics);
      const report = outcome.report!;
      const plan: Plan = report.errors.length > 0 ? { ...report, incomplete: new Set(report.errors.map((e) => e.address)).size } : report;
      // The cloud's own plan: the Kubernetes objects its charts would change (server-side-apply dry run).
      const check = opts.kubeconfig ? await checkPath(path, loadSchemaRegistry()) : undefined;
      const declaredCloud = check ? cloudManifest(check.validated.manifests) : undefined;
      const cloudPlan = declaredCloud ? await planRevisionCloud(declaredCloud, path, opts) : undefined;
      print(cloudPlan ? { ...plan, cloud: cloudPlan } : plan, opts.output);
      if (report.errors.length > 0) {
        for (const e of report.errors) process.stderr.write(`error: ${e.message}\n`);
        process.exitCode = 1;
        return;
      }
      if (opts.save) {
        await writeSavedPlan(opts.save, {
          apiVersion: 'kupenstack.io/v1alpha1',
          kind: 'SavedPlan',
          createdAt: new Date().toISOString(),
          path: resolve(path),
          cloud,
          owner: config.owner,
          prune: opts.prune,
          observed: report.observed,
          plan: jsonPlan(plan),
        });
        process.stderr.write(`plan saved to ${opts.save}; apply exactly this plan with: kupenstack apply --plan ${opts.save}\n`);
      }
      process.exitCode = Math.max(exitCode(plan), cloudPlan && cloudPlan.changes.length > 0 ? 2 : 0);
    });
}

async function planRevisions(path: string, opts: PlanOptions): Promise<void> {
  if (opts.save) throw new UsageError('--save needs a live plan (--cloud): a plan between revisions knows nothing of the cloud, so it cannot be applied');
  if (opts.cloud)
    throw new UsageError('--base plans between Git revisions without any cloud; leave out --cloud (or leave out --base to plan against the cloud)');
  const config = loadConfig(opts.config);
  const registry = loadSchemaRegistry();
  const [base, head] = await Promise.all([checkGitRevision(opts.repo, opts.base!, path, registry), checkGitRevision(opts.repo, opts.head, path, registry)]);
  // A broken base is what is deployed; only the head must be valid to be planned.
  if (head.diagnostics.length > 0) return invalid(head.diagnostics);
  // Upgrades are judged against the base: skip-level, downgrade, release plus other changes.
  const transitions = checkTransitions(base.validated.manifests, head.validated.manifests, { label: head.label });
  if (transitions.length > 0) return invalid(transitions);
  if (base.diagnostics.length > 0)
    process.stderr.write(
      `warning: the base revision ${base.revision} has ${base.diagnostics.length} validation errors; its invalid manifests are left out of the comparison\n`,
    );
  // The cloud: two renders of its charts compared, no cluster needed (helm renders locally).
  const headCloud = cloudManifest(head.validated.manifests);
  const baseCloud = cloudManifest(base.validated.manifests);
  const cloudPlan =
    headCloud && (!baseCloud || stableJson(baseCloud.spec) !== stableJson(headCloud.spec))
      ? await planCloudBetweenRevisions(baseCloud, headCloud, resolve(opts.repo))
      : undefined;
  const { plan, errors } = await planBetweenRevisions(base.validated, head.validated, {
    adapters,
    prune: opts.prune,
    massDeleteThreshold: config.massDeleteThreshold / 100,
    allowMassDelete: false,
    baseLabel: base.revision,
    headLabel: head.revision,
  });
  print(cloudPlan ? { ...plan, cloud: cloudPlan } : plan, opts.output);
  if (errors.length > 0) {
    for (const e of errors) process.stderr.write(`error: ${e}\n`);
    process.exitCode = 1;
    return;
  }
  process.exitCode = Math.max(exitCode(plan), cloudPlan && cloudPlan.changes.length > 0 ? 2 : 0);
}

function print(plan: Plan, output: PlanOptions['output']): void {
  const rendered =
    output === 'json'
      ? renderJson(plan)
      : output === 'markdown'
        ? renderMarkdown(plan, {})
        : renderText(plan, { color: process.stdout.isTTY === true && !process.env.NO_COLOR });
  process.stdout.write(rendered.endsWith('\n') ? rendered : `${rendered}\n`);
}

function invalid(diagnostics: Diagnostic[]): void {
  for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  process.stderr.write(`${diagnostics.length} validation errors: no plan\n`);
  process.exitCode = 1;
}

const exitCode = (plan: Plan): number => (plan.changes.length > 0 || plan.held.length > 0 ? 2 : 0);
