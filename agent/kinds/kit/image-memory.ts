import type { ResolvedDisk } from '../../../oci/disk-source.ts';
import { DiskSources } from '../../glance/registry-source.ts';

/** One manifest's last resolution. */
export interface Resolution {
  /** The manifest's address. */
  address: string;
  disk: ResolvedDisk;
  /** When it started: `interval` and `schedule` count from here (kinds/image/oci-poll.ts). */
  at: number;
  /** The run's `refresh` it answered (AdapterContext.refresh): the other passes of that run take it as it is. */
  refresh?: ReadonlySet<string>;
}

/** What a rollout (kinds/imagerollout/) lets one namespace's Image of a governed tag use now. */
export interface GateDecision {
  digest: string;
  /** Why, for the plan's image line and the TagMoved Event: `held by rollout os: wave canary soaking until …`. */
  reason: string;
}

/** The tag an Image follows, as the gate compares it with a rollout's source. */
export interface FollowedTag {
  repository: string;
  tag?: string | undefined;
  semver?: string | undefined;
}

/**
 * The controller's rollouts (controller/rollouts/): which digest an Image
 * following `tag` in `namespace` may use; undefined when no rollout governs
 * the tag (the registry's answer stands). The standalone front end has none.
 */
export interface DigestGate {
  decide(namespace: string, tag: FollowedTag): GateDecision | undefined;
}

/**
 * What the Image kind remembers between runs, owned by the front end that
 * runs them (the standalone agent, the controller's leadership; a one-shot
 * `apply` makes its own) and handed to the engine (EngineDeps.images): the
 * last resolution per manifest, so `interval` and `schedule` spare the
 * registry, and the registry clients, so token caches and connections are
 * shared. What moved in a registry is not kept here: each front end records
 * it and hands it to a run as `refresh`. Nothing here talks to a registry.
 */
export class ImageMemory {
  /** Last resolution per manifest (kinds/image/oci.ts resolveManifest's cache key). */
  readonly resolved = new Map<string, Resolution>();
  /** One registry client per credentials and advice (glance/registry-source.ts). */
  readonly sources = new DiskSources();
  /** The rollouts' gate, set by the front end that has one (the controller). */
  readonly gate: DigestGate | undefined;

  constructor(gate?: DigestGate) {
    this.gate = gate;
  }

  /** Whether a resolution of this manifest that started at or after `since` gave an answer: a front end keeps what moved until one did. */
  resolvedSince(address: string, since: number): boolean {
    for (const r of this.resolved.values()) if (r.address === address && r.at >= since) return true;
    return false;
  }
}
