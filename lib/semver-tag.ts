import { maxSatisfying, parse } from 'semver';

/**
 * The highest tag whose name is a semantic version in the range (a leading
 * `v` is allowed, as in `v1.2.0`). Pre-releases only match ranges that name
 * a pre-release of the same version (npm's rule). When two tags carry the same
 * version (`1.2.0` and `v1.2.0`), the one without `v` wins, so the choice is stable.
 * Shared by the Git source (`ref.semver`) and the OCI image source (`source.oci.semver`).
 */
export function chooseSemverTag(tags: readonly string[], range: string): string | undefined {
  const byVersion = new Map<string, string>();
  for (const tag of [...tags].sort()) {
    const version = parse(tag);
    if (version === null) continue;
    const key = version.format();
    if (!byVersion.has(key)) byVersion.set(key, tag);
  }
  const best = maxSatisfying([...byVersion.keys()], range);
  return best === null ? undefined : byVersion.get(best);
}
