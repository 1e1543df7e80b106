import { KupenstackError } from '../../errors.ts';
import type { VirtualMachineSpec } from '../../model/kinds.generated.ts';
import { isPlaceholderId, lookedUpId, type AdapterContext } from '../kit/adapter.ts';
import type { NovaServer } from '../kit/nova-server.ts';

/** A server's flavor: the manifest's reference resolved to Nova's id and sizes, and the sizes a server shows back. */

interface FlavorView {
  name: string;
  vcpus: number;
  ram: number;
  disk: number;
  ephemeral: number;
  swap: number;
}

interface NovaFlavor {
  id: string;
  name: string;
  vcpus: number;
  ram: number;
  disk: number;
  'OS-FLV-EXT-DATA:ephemeral'?: number;
  swap?: number | '';
}

function flavorView(f: NovaFlavor): FlavorView {
  return { name: f.name, vcpus: f.vcpus, ram: f.ram, disk: f.disk, ephemeral: f['OS-FLV-EXT-DATA:ephemeral'] ?? 0, swap: Number(f.swap) || 0 };
}

/**
 * Since compute 2.47 a server shows a copy of its flavor without the id, so
 * the flavor is compared by name and sizes: a Flavor manifest replaced under
 * the same name with other sizes still reads as a change (a resize).
 */
export function serverFlavor(s: NovaServer): FlavorView | undefined {
  const f = s.flavor;
  if (!f) return undefined;
  return { name: f.original_name ?? '', vcpus: f.vcpus ?? 0, ram: f.ram ?? 0, disk: f.disk ?? 0, ephemeral: f.ephemeral ?? 0, swap: Number(f.swap) || 0 };
}

/** A flavor as Nova's flavor list or create answers it: everything flavorView reads. */
function isNovaFlavor(raw: Record<string, unknown>): raw is Record<string, unknown> & NovaFlavor {
  return typeof raw.name === 'string' && typeof raw.vcpus === 'number' && typeof raw.ram === 'number' && typeof raw.disk === 'number';
}

/** A flavor nobody could ask Nova about yet (a plan): its name only, no made-up sizes. */
const placeholderFlavor = (name: string): { name: string } => ({ name });

export async function resolveFlavor(ctx: AdapterContext, spec: VirtualMachineSpec): Promise<{ id: string; view: FlavorView | { name: string } }> {
  if (spec.flavorRef) {
    const id = ctx.idOf('Flavor', spec.flavorRef.name);
    if (isPlaceholderId(id)) return { id, view: placeholderFlavor(id) };
    // A flavor's sizes never change under its id: what the Flavor kind listed or made this run is
    // used as is (no GET per project at scale). Else read with the admin scope (where Flavor
    // manifests are made): it does not depend on the project's access yet.
    const seen = ctx.remoteOf?.('Flavor', spec.flavorRef.name);
    if (seen?.id === id && isNovaFlavor(seen.raw)) return { id, view: flavorView(seen.raw) };
    const f = await ctx.memo(
      `VirtualMachine:flavor:${id}`,
      async () => (await (await ctx.cloud.adminCompute()).get<{ flavor: NovaFlavor }>(`/flavors/${id}`)).flavor,
    );
    return { id, view: flavorView(f) };
  }
  const name = spec.flavorName;
  if (!name) throw new KupenstackError('vm.spec', 'a VirtualMachine needs flavorRef or flavorName');
  if (ctx.offline) return { id: lookedUpId(`public flavor ${name}`), view: placeholderFlavor(name) };
  const flavors = await ctx.memo('VirtualMachine:public-flavors', () => ctx.apis.compute.list<NovaFlavor>('/flavors/detail', 'flavors', { is_public: true }));
  const f = flavors.find((x) => x.name === name);
  if (!f)
    throw new KupenstackError(
      'vm.flavor-not-found',
      `flavorName "${name}": no public Nova flavor has this name (for a private one, declare a Flavor manifest and use flavorRef)`,
    );
  return { id: f.id, view: flavorView(f) };
}
