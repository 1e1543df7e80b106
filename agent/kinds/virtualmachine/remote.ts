import { markerFromMetadata, ownerTagPrefix, parseDescriptionMarker } from '../../ownership/marker.ts';
import type { AdapterContext, Remote } from '../kit/adapter.ts';
import { powerStateOf, type NovaServer } from '../kit/nova-server.ts';
import { serverFlavor } from './flavor.ts';
import { type NeutronPort, type Nic, metaImage, sortedRecord, uniqSorted } from './shapes.ts';

/** A Nova server (and its Neutron ports) as the engine sees it: observed fields in the shape desired() returns, and its status report. */

export const imageIdOf = (s: NovaServer): string | undefined => (typeof s.image === 'object' && s.image.id ? s.image.id : undefined);

/** A Port manifest's port (it carries a KupenStack marker); the rest were made by Nova from a network. */
export const isPortManifest = (p: NeutronPort): boolean => parseDescriptionMarker(p.description).marker?.ref.startsWith('Port/') ?? false;

/**
 * NICs in boot order. Neutron ports have no order; Nova's `addresses` lists
 * NICs in order, grouped by network name, so MAC order is the NIC order
 * (except for NICs on one network split by another, which come together).
 */
function nicsOf(s: NovaServer, ports: NeutronPort[]): { nics: Nic[]; novaPorts: NeutronPort[] } {
  const macs: string[] = [];
  for (const addrs of Object.values(s.addresses ?? {})) {
    for (const a of addrs) {
      const mac = a['OS-EXT-IPS-MAC:mac_addr'];
      if (mac && !macs.includes(mac)) macs.push(mac);
    }
  }
  const rank = (p: NeutronPort): number => {
    const i = macs.indexOf(p.mac_address);
    return i < 0 ? macs.length : i;
  };
  const ordered = [...ports].sort((a, b) => rank(a) - rank(b) || (a.id < b.id ? -1 : 1));
  return { nics: ordered.map((p) => (isPortManifest(p) ? { port: p.id } : { uuid: p.network_id })), novaPorts: ordered.filter((p) => !isPortManifest(p)) };
}

/** Attached data volumes. A volume-backed server lists its root volume first (Nova's block device order). */
function dataVolumes(s: NovaServer): string[] {
  const all = (s['os-extended-volumes:volumes_attached'] ?? []).map((v) => v.id);
  return uniqSorted(imageIdOf(s) ? all : all.slice(1));
}

const userMetadata = (meta: Record<string, string> | undefined): Record<string, string> =>
  sortedRecord(Object.fromEntries(Object.entries(meta ?? {}).filter(([k]) => !k.startsWith('kupenstack_'))));

const userTags = (tags: string[] | undefined): string[] => uniqSorted((tags ?? []).filter((t) => !t.startsWith(ownerTagPrefix)));

export function toRemote(s: NovaServer, ports: NeutronPort[]): Remote {
  const { nics, novaPorts } = nicsOf(s, ports);
  return {
    id: s.id,
    name: s.name,
    status: s.status,
    marker: markerFromMetadata(s.metadata),
    raw: s as unknown as Record<string, unknown>,
    fields: {
      name: s.name,
      description: s.description ?? '',
      metadata: userMetadata(s.metadata),
      tags: userTags(s.tags),
      power_state: powerStateOf(s),
      // A resize not confirmed yet differs from every declared flavor: the update confirms it (actions.ts resize).
      flavor: s.status === 'VERIFY_RESIZE' && !s['OS-EXT-STS:task_state'] ? { ...serverFlavor(s), resize: 'unconfirmed' } : serverFlavor(s),
      image: s.metadata?.[metaImage],
      image_id: imageIdOf(s),
      volumes: dataVolumes(s),
      security_groups: novaPorts.length > 0 ? uniqSorted(novaPorts.flatMap((p) => p.security_groups ?? [])) : undefined,
      networks: nics,
      key_name: s.key_name ?? undefined,
      availability_zone: s['OS-EXT-AZ:availability_zone'] || undefined,
      config_drive: s.config_drive === true || String(s.config_drive).toLowerCase() === 'true',
    },
  };
}

/** What `kubectl get ksvm` shows: Nova's status, the power state, the image and the addresses (fixed before floating). */
export function serverReport(s: NovaServer): Record<string, unknown> {
  if (s.status === undefined) return {};
  const addresses = Object.entries(s.addresses ?? {})
    .flatMap(([network, list]) =>
      list
        .filter((a) => typeof a.addr === 'string')
        .map((a) => ({
          network,
          address: a.addr!,
          type: a['OS-EXT-IPS:type'] === 'floating' ? 'floating' : 'fixed',
          ...(a['OS-EXT-IPS-MAC:mac_addr'] ? { macAddress: a['OS-EXT-IPS-MAC:mac_addr'] } : {}),
        })),
    )
    .sort((a, b) => (a.type === b.type ? 0 : a.type === 'fixed' ? -1 : 1));
  const imageId = imageIdOf(s);
  return { serverStatus: s.status, powerState: powerStateOf(s) ?? 'unknown', ...(imageId ? { imageID: imageId } : {}), addresses };
}

function byDevice(ports: NeutronPort[]): Map<string, NeutronPort[]> {
  const out = new Map<string, NeutronPort[]>();
  for (const p of ports) out.set(p.device_id, [...(out.get(p.device_id) ?? []), p]);
  return out;
}

export async function withPorts(ctx: AdapterContext, servers: NovaServer[]): Promise<Remote[]> {
  if (servers.length === 0) return [];
  // One list for the project's ports: NIC networks and security groups live in Neutron.
  const ports = byDevice(await ctx.apis.network.list<NeutronPort>('/ports', 'ports', { project_id: ctx.projectId }));
  return servers.map((s) => toRemote(s, ports.get(s.id) ?? []));
}
