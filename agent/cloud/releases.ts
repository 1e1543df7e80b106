/**
 * The OpenStack release series KupenStack knows, oldest first, and the upgrade
 * steps between them: the next release, or SLURP → next SLURP (the
 * "skip-level upgrade release process" pairs: 2023.1 → 2024.1 → 2025.1 …; Rockoon's
 * SLURP_RELEASES includes yoga → 2023.1 too). OpenStack-Helm names a release by its
 * number (values_overrides/<chart>/2025.1-ubuntu_noble.yaml); code names are accepted.
 */
export interface Release {
  /** `2025.1` */
  series: string;
  /** `epoxy` */
  name: string;
  slurp: boolean;
}

export const RELEASES: readonly Release[] = [
  { series: '2021.1', name: 'wallaby', slurp: false },
  { series: '2021.2', name: 'xena', slurp: false },
  { series: '2022.1', name: 'yoga', slurp: true },
  { series: '2022.2', name: 'zed', slurp: false },
  { series: '2023.1', name: 'antelope', slurp: true },
  { series: '2023.2', name: 'bobcat', slurp: false },
  { series: '2024.1', name: 'caracal', slurp: true },
  { series: '2024.2', name: 'dalmatian', slurp: false },
  { series: '2025.1', name: 'epoxy', slurp: true },
  { series: '2025.2', name: 'flamingo', slurp: false },
  { series: '2026.1', name: 'gazpacho', slurp: true },
  { series: '2026.2', name: 'hibiscus', slurp: false },
];

/** The release a spec names (series or code name), or undefined when KupenStack does not know it. */
export function findRelease(name: string): Release | undefined {
  return RELEASES.find((r) => r.series === name || r.name === name);
}

const indexOf = (r: Release): number => RELEASES.indexOf(r);

export type ReleaseStep =
  | { kind: 'same' }
  | { kind: 'upgrade'; slurp: boolean }
  | { kind: 'downgrade' }
  | { kind: 'skip-level'; allowed: string[] };

/** What going from `from` to `to` is: the same release, one allowed upgrade step, a downgrade, or a skip. */
export function releaseStep(from: Release, to: Release): ReleaseStep {
  const a = indexOf(from);
  const b = indexOf(to);
  if (a === b) return { kind: 'same' };
  if (b < a) return { kind: 'downgrade' };
  if (b === a + 1) return { kind: 'upgrade', slurp: false };
  const nextSlurp = from.slurp ? RELEASES.slice(a + 1).find((r) => r.slurp) : undefined;
  if (nextSlurp === to) return { kind: 'upgrade', slurp: true };
  return { kind: 'skip-level', allowed: nextTargets(from).map((r) => r.series) };
}

/** Where one upgrade from `from` may go. */
export function nextTargets(from: Release): Release[] {
  const a = indexOf(from);
  const out: Release[] = [];
  const next = RELEASES[a + 1];
  if (next) out.push(next);
  const nextSlurp = from.slurp ? RELEASES.slice(a + 1).find((r) => r.slurp) : undefined;
  if (nextSlurp && nextSlurp !== next) out.push(nextSlurp);
  return out;
}

export const label = (r: Release): string => `${r.series} (${r.name})`;
