import { Command } from 'commander';
import { formatDiagnostic, type Diagnostic } from '../diagnostic.ts';
import type { ApplyReport } from '../act/apply.ts';
import { applyValidated, loadPath } from '../standalone/apply-path.ts';
import { UsageError } from '../errors.ts';
import { planFromJson, readSavedPlan, type SavedPlan } from '../plan/saved.ts';
import { resolveCloud, withCloudOptions, type CloudOptions } from './cloud-options.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';
import { secretsDirOf } from '../config/config.ts';
import { EnvFileSecretResolver } from '../secrets/env-file.ts';
import { loadSchemaRegistry } from '../schema/registry.ts';
import { withCloudStepOptions } from './cloud-step.ts';
import { configureGlanceFrom, glanceDiskFormatOption, type GlanceOptions } from './glance-options.ts';
import { cloudNotReady, driveRevisionCloud, type CloudStepOptions, type RevisionCloud } from '../standalone/revision-cloud.ts';
import { refuseRolloutsStandalone } from '../kinds/imagerollout/index.ts';

interface ApplyOptions extends CloudOptions, CloudStepOptions, GlanceOptions {
  prune: boolean;
  allowMassDelete: boolean;
  output: OutputFormat;
  plan?: string;
}

/** `kupenstack apply [PATH]`: validate, then make the cloud equal to PATH. Exit 0 when converged, 1 otherwise. */
export function applyCommand(): Command {
  return withCloudStepOptions(
    withCloudOptions(
      new Command('apply')
        .description('validate PATH and make the OpenStack cloud equal to it: create, update, heal and (with --prune) delete what this owner created')
        .argument('[path]', "a folder of manifests or one manifest file (default: the current folder, or the saved plan's)"),
    ),
  )
    .option('--prune', 'delete objects this owner created that are no longer declared', false)
    .option('--allow-mass-delete', 'apply a revision that deletes more than the configured share of the owned objects', false)
    .option('--plan <file>', 'apply exactly a plan saved by plan --save; refused when the manifests or the cloud changed since')
    .addOption(outputOption())
    .addOption(glanceDiskFormatOption())
    .action(runApply);
}

/** The command's run: the saved plan's options, the revision loaded and validated once, its cloud first, then its resources. */
async function runApply(pathArg: string | undefined, opts: ApplyOptions): Promise<void> {
  configureGlanceFrom(opts);
  const saved = opts.plan ? await readSavedPlan(opts.plan) : undefined;
  if (saved) checkSavedOptions(opts, saved);
  const path = pathArg ?? saved?.path ?? '.';
  const { config, cloud, cloudsFile } = resolveCloud(saved ? { ...opts, cloud: saved.cloud, owner: saved.owner } : opts);
  const prune = saved ? saved.prune : opts.prune;
  const controller = new AbortController();
  const stop = (): void => controller.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  const registry = loadSchemaRegistry();
  // Manifests' secret references (userDataSecretRef, credentialsSecretRef) read from secretsDir, as the agent does.
  const how = {
    registry,
    cloud,
    cloudsFile,
    config,
    prune,
    allowMassDelete: saved ? false : opts.allowMassDelete,
    log,
    signal: controller.signal,
    secrets: new EnvFileSecretResolver({ secretsDir: secretsDirOf(config) }),
  };
  // Loaded and validated once: the cloud step and the resources take the same revision.
  const input = await loadPath({ ...how, path });
  if ('diagnostics' in input) return reportInvalid(input.diagnostics, opts.output);
  // Before the cloud step too: a revision with an ImageRollout changes nothing (kinds/imagerollout/standalone.ts).
  refuseRolloutsStandalone(input.validated.manifests);
  // The cloud first: the resources of the same revision wait for it to be Ready.
  const declared = await driveRevisionCloud({ dir: path, validated: input.validated }, opts, log, controller.signal);
  if (!reportCloud(declared)) return;
  // The fresh decision must equal the saved plan, or nothing is written.
  const r = await applyValidated(input, { ...how, ...(saved ? { plan: { ...planFromJson(saved.plan), observed: saved.observed } } : {}) });
  reportApplied(r, opts.output);
}

/** An invalid revision: every diagnostic, and nothing applied (exit 1). */
function reportInvalid(diagnostics: readonly Diagnostic[], output: OutputFormat): void {
  for (const d of diagnostics) process.stderr.write(`${formatDiagnostic(d)}\n`);
  process.stderr.write(`${diagnostics.length} validation errors: nothing was applied\n`);
  if (output === 'json')
    printJson({
      revision: null,
      created: 0,
      updated: 0,
      replaced: 0,
      deleted: 0,
      healed: 0,
      unchanged: 0,
      held: [],
      errors: diagnostics.map((d) => ({ address: `${d.file}:${d.line}:${d.column}`, code: d.code, message: d.message })),
      apiCalls: { read: 0, write: 0 },
    });
  process.exitCode = 1;
}

/** The revision's OpenStackCloud, validated only or driven; false when it is not Ready (exit 1: its resources wait). */
function reportCloud(declared: RevisionCloud | undefined): boolean {
  if (declared && !declared.driven) {
    process.stderr.write(
      `note: OpenStackCloud ${declared.manifest.metadata.name} (${declared.manifest.source.file}) is validated only; pass --kubeconfig to drive it in a Kubernetes cluster\n`,
    );
  } else if (declared?.driven) {
    const driven = declared.driven;
    if (!driven.ready) {
      process.stdout.write(`error: ${cloudNotReady(declared)}\n`);
      process.exitCode = 1;
      return false;
    }
    process.stdout.write(
      `OpenStackCloud ${declared.manifest.metadata.name}: Ready (release ${driven.status.release ?? '?'})${driven.pruned.length ? `, ${driven.pruned.length} objects pruned` : ''}\n`,
    );
  }
  return true;
}

/** What the apply did, as JSON or lines; exit 0 only when nothing failed or was held. */
function reportApplied(r: ApplyReport, output: OutputFormat): void {
  if (output === 'json') {
    printJson({
      revision: r.revision,
      created: r.created,
      updated: r.updated,
      replaced: r.replaced,
      deleted: r.deleted,
      healed: r.healed,
      unchanged: r.unchanged,
      held: r.held,
      errors: r.errors,
      apiCalls: r.apiCalls,
    });
  } else {
    for (const w of r.warnings) process.stdout.write(`warning: ${w}\n`);
    for (const h of r.held) process.stdout.write(`held: delete ${h.address}: ${h.reason}\n`);
    for (const e of r.errors) process.stdout.write(`error: ${e.message}${e.requestId ? ` [${e.requestId}]` : ''}\n`);
    process.stdout.write(
      `${r.revision}: ${r.created} created, ${r.updated} updated, ${r.replaced} replaced, ${r.deleted} deleted, ${r.healed} healed, ` +
        `${r.unchanged} unchanged; ${r.errors.length} errors; API calls: ${r.apiCalls.read} read, ${r.apiCalls.write} write\n`,
    );
  }
  process.exitCode = r.errors.length === 0 && r.held.length === 0 ? 0 : 1;
}

/** A saved plan fixes the cloud, the owner and prune: the command line may repeat them, not change them. */
function checkSavedOptions(opts: ApplyOptions, saved: SavedPlan): void {
  if (opts.cloud && opts.cloud !== saved.cloud)
    throw new UsageError(`the plan was made for cloud "${saved.cloud}", not "${opts.cloud}"; plan again for that cloud`);
  if (opts.owner && opts.owner !== saved.owner) throw new UsageError(`the plan was made for owner "${saved.owner}", not "${opts.owner}"; plan again`);
  if (opts.prune && !saved.prune) throw new UsageError('the plan was made without --prune; plan again with --prune');
  if (opts.allowMassDelete)
    throw new UsageError('--allow-mass-delete cannot widen a saved plan: its held deletions stay held; plan and apply without a saved plan to confirm them');
}
