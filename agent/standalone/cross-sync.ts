import type { DependencyObjects } from '../act/dependencies.ts';
import { ownedProjects } from '../act/projects.ts';
import type { Manifest } from '../model/manifest.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import { FileStateStore } from '../status/file-store.ts';
import { heldReferences, type CrossSyncLinks } from '../sync/cross-sync.ts';

/** One Sync of the standalone agent as the others see it: whom it depends on, whose objects it owns, what it applied. */
export interface SyncPeer {
  name: string;
  dependsOn: readonly string[];
  owner: string;
  /** Its own state dir (the engine's state file of its owner is there). */
  stateDir: string;
  /** Its last good revision's manifests; undefined before it applied one. */
  applied(): Promise<readonly Manifest[] | undefined>;
}

/**
 * References across Syncs in the standalone agent (the cluster's twin is
 * controller/syncs/cross-sync.ts): a dependency declares what its last good
 * revision holds; a dependent's references are read from its last good
 * revision, only when this Sync's new revision drops something.
 */
export function standaloneCrossSync(name: string, peers: () => ReadonlyMap<string, SyncPeer>, registry: SchemaRegistry): CrossSyncLinks {
  return {
    provided: async () => {
      const all = peers();
      const deps = all.get(name)?.dependsOn ?? [];
      if (deps.length === 0) return undefined;
      const objects = new Map<string, string>();
      for (const d of deps) for (const m of (await all.get(d)?.applied()) ?? []) objects.set(m.address, d);
      return { objects, syncs: deps };
    },
    stillReferenced: async (kept) => {
      const all = [...peers().values()];
      const dropped = new Set(((await peers().get(name)?.applied()) ?? []).map((m) => m.address).filter((a) => !kept.has(a)));
      const dependents = all.filter((s) => s.dependsOn.includes(name));
      if (dropped.size === 0 || dependents.length === 0) return [];
      const read = async (s: SyncPeer): Promise<{ sync: string; objects: { kind: string; metadata: Manifest['metadata']; spec: Manifest['spec'] }[] }> => ({
        sync: s.name,
        objects: ((await s.applied()) ?? []).map((m) => ({ kind: m.kind, metadata: m.metadata, spec: m.spec })),
      });
      return heldReferences(dropped, await Promise.all(dependents.map(read)), registry);
    },
  };
}

/**
 * What the Syncs `name` depends on made, for its engine run: their owners'
 * projects (a namespace it has none for uses theirs) and the ids their state
 * records for what they applied. Undefined when it depends on none.
 */
export async function dependencyObjects(cloud: OpenStackCloud, name: string, peers: ReadonlyMap<string, SyncPeer>): Promise<DependencyObjects | undefined> {
  const deps = (peers.get(name)?.dependsOn ?? []).flatMap((d) => peers.get(d) ?? []);
  if (deps.length === 0) return undefined;
  const projects = (await Promise.all(deps.map((d) => ownedProjects(cloud, d.owner)))).flat();
  const ids = new Map<string, string>();
  for (const d of deps) {
    const state = await new FileStateStore(d.stateDir, d.owner).load();
    for (const [address, r] of Object.entries(state.resources)) if (r.id !== undefined) ids.set(address, r.id);
  }
  return { projects, ids };
}
