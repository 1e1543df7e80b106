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

export type ReleaseStep = { kind: 'same' } | { kind: 'upgrade'; slurp: boolean } | { kind: 'downgrade' } | { kind: 'skip-level'; allowed: string[] };

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

/**
 * Fast-forward upgrades: a skip beyond the SLURP rules that KupenStack supports because every
 * chart it names was checked to go straight, and how. Operators take such a path when the
 * releases between are not packaged for them (Debian ships 2022.2 in bookworm and 2025.1 in
 * trixie, nothing between). A chart the path does not name refuses the upgrade (with the
 * chart's reason when one is known): nothing is applied.
 */
export interface FastForward {
  from: string;
  to: string;
  /** Chart → why it can go straight (what was checked, what the chart's values do for it). */
  charts: Readonly<Record<string, string>>;
  /** Chart → why it cannot: named in the refusal. */
  refused: Readonly<Record<string, string>>;
}

export const FAST_FORWARD: readonly FastForward[] = [
  {
    from: '2022.2',
    to: '2025.1',
    charts: {
      mariadb: 'infrastructure: the server does not change with the OpenStack release',
      rabbitmq: 'infrastructure: the broker does not change with the OpenStack release',
      memcached: 'infrastructure: the cache does not change with the OpenStack release',
      keystone: "alembic expand/migrate/contract chain unbroken from 2022.2's head (keystone-manage db_sync --expand, --migrate, --contract)",
      glance: "alembic chain unbroken from 2022.2's head (glance-manage db expand, migrate, contract)",
      placement: "alembic chain unbroken from 2022.2's head (placement-manage db sync)",
      neutron: "expand and contract branches unbroken from 2022.2's heads (neutron-db-manage upgrade --expand, --contract)",
      nova:
        'alembic chains unbroken from 2022.2 (nova-manage api_db sync, db sync, online_data_migrations); nova 2025.1 refuses a 2022.2 nova-compute ' +
        "(service version 64 < Caracal 66) until it re-registers: its values set [workarounds] disable_compute_service_check_for_ffu, nova's switch for a fast-forward upgrade",
    },
    refused: {
      cinder: 'not checked: upgrade through 2023.1 and 2024.1',
      horizon: 'not checked: upgrade through 2023.1 and 2024.1',
    },
  },
];

/** The fast-forward path from → to, when KupenStack has one. */
export function fastForward(from: Release, to: Release): FastForward | undefined {
  return FAST_FORWARD.find((f) => f.from === from.series && f.to === to.series);
}
