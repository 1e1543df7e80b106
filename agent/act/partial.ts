import { subsetOf } from '../validate/subset.ts';
import type { ApplyReport, EngineDeps, EngineOptions, RevisionInput } from './apply.ts';

/** The engine entry point (applyRevision), as a front end holds it (the controller's is injected). */
export type ApplyRevision = (input: RevisionInput, deps: EngineDeps, opts: EngineOptions) => Promise<ApplyReport>;

/**
 * The one "these first" pass of both front ends: only the named manifests of
 * a validated revision (a registry notification's Images, the fast pass's
 * changed manifests) and what they depend on are observed, planned and
 * written, without prune; the full pass follows. Skipped when the revision
 * declares none of them.
 */
export async function applyOnly(
  engine: ApplyRevision,
  input: RevisionInput,
  addresses: readonly string[],
  deps: EngineDeps,
  requeue = false,
): Promise<{ skipped: string } | { report: ApplyReport; applied: string[] }> {
  const wanted = new Set(addresses);
  const applied = input.validated.manifests.filter((m) => wanted.has(m.address)).map((m) => m.address);
  if (applied.length === 0) return { skipped: 'the revision declares none of these manifests any more' };
  const report = await engine({ revision: input.revision, validated: subsetOf(input.validated, applied) }, deps, {
    prune: false,
    allowMassDelete: false,
    partial: true,
    ...(requeue ? { requeue } : {}),
  });
  return { report, applied };
}
