import { parseRepository } from '../../../oci/reference.ts';
import { diskSourceFor } from '../../glance/registry-source.ts';
import type { ImageRolloutSpec } from '../../model/kinds.generated.ts';
import { parseDuration } from '../../util/duration.ts';
import { restWave, waveOf } from './selector.ts';
import type { WavePlan } from './waves.ts';

/** The spec's durations in milliseconds, with their defaults. */
export function timingsOf(spec: ImageRolloutSpec): { intervalMs: number; progressDeadlineMs: number } {
  return { intervalMs: parseDuration(spec.interval ?? '1m'), progressDeadlineMs: parseDuration(spec.health?.progressDeadline ?? '15m') };
}

/** The waves now: each namespace in the first wave that selects its labels, the others in the implicit last wave (no soak). */
export function planWaves(spec: ImageRolloutSpec, namespaces: readonly string[], labelsOf: (ns: string) => Readonly<Record<string, string>>): WavePlan[] {
  const sorted = [...new Set(namespaces)].sort();
  const of = new Map(sorted.map((ns) => [ns, waveOf(spec, labelsOf(ns))]));
  const plan = (name: string, soak: string): WavePlan => ({ name, soakMs: parseDuration(soak), namespaces: sorted.filter((ns) => of.get(ns) === name) });
  return [...spec.waves.map((w) => plan(w.name, w.soak ?? '5m')), plan(restWave, '0s')];
}

/**
 * Where the governed tag points now: the tag's own digest (an index's when
 * it is one), and the tag (a semver range's highest match). The rollout is the cluster admin's: the controller's own
 * registry credentials (its docker config) are used, as `kupenstack image
 * inspect` would.
 */
export async function resolveTag(source: ImageRolloutSpec['source'], signal?: AbortSignal): Promise<{ digest: string; tag: string | undefined }> {
  const { repository, tag, semver, insecure } = source;
  const disk = await diskSourceFor({ plainHttpAdvice: 'set insecure: true under spec.source' }).resolve(
    { repository, ...(semver ? { semver } : { tag: tag ?? 'latest' }), ...(insecure ? { insecure } : {}) },
    signal,
  );
  // The tag too: a semver range's winner names the Images to run at once.
  return { digest: disk.indexDigest ?? disk.manifestDigest, tag: disk.tag };
}

/** The governed tag as a registry notification names a moved one (hooks/registry-match.ts): the host apart from the repository's path. */
export function movedTagOf(source: ImageRolloutSpec['source'], tag: string | undefined): { host: string; repository: string; tag?: string } {
  const { registry, repository } = parseRepository(source.repository);
  return { host: registry, repository, ...(tag ? { tag } : {}) };
}
