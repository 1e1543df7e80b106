import { OpenStackError } from '../../openstack/errors.ts';
import type { ExportScope, KindExport } from '../kit/export.ts';
import { projectItems, text } from '../kit/export.ts';
import { powerStateOf, type NovaServer } from '../kit/nova-server.ts';
import { isDefaultGroup } from '../securitygroup/index.ts';

interface RawPort {
  id: string;
  device_id?: string;
  network_id: string;
  mac_address?: string;
  fixed_ips?: { ip_address: string }[];
  security_groups?: string[];
}

/** The server's NICs in boot order (Nova lists addresses in NIC order, grouped by network, so MAC order is the order). */
function nics(s: NovaServer, ports: readonly RawPort[]): RawPort[] {
  const macs = Object.values(s.addresses ?? {}).flatMap((list) => list.map((a) => a['OS-EXT-IPS-MAC:mac_addr']));
  const rank = (p: RawPort): number => (macs.includes(p.mac_address) ? macs.indexOf(p.mac_address) : macs.length);
  return [...ports].sort((a, b) => rank(a) - rank(b) || (a.id < b.id ? -1 : 1));
}

/** Whether Glance still has the image (one read per image outside the project's own list, once per export). */
function imageExists(s: ExportScope, id: string): Promise<boolean> {
  if (s.listed('Image').some((i) => String(i.id) === id)) return Promise.resolve(true);
  return s.memo(`Image:exists:${id}`, () =>
    s.image.get(`/images/${id}`).then(
      () => true,
      (err: unknown) => {
        if (err instanceof OpenStackError && err.notFound) return false;
        throw err;
      },
    ),
  );
}

/**
 * A server: its flavor (a private flavor of the project by reference, else a
 * public one by name), image, NICs (network and address: the ports Nova made
 * for it are the VM's, not Port manifests), groups, key pair and attached
 * volumes, by reference. User data is never written: it may hold secrets.
 * Nova shows it to an admin (microversion 2.3+); the manifest leaves it out
 * (its adoption never touches it) and a note says how to manage it.
 */
export const virtualMachineExport: KindExport = {
  kind: 'VirtualMachine',
  list: (s) =>
    projectItems(s, 'VirtualMachine', 'tenant_id', (project) => s.compute.list('/servers/detail', 'servers', { all_tenants: 1, project_id: project })),
  note: (raw) =>
    typeof raw['OS-EXT-SRV-ATTR:user_data'] === 'string' && raw['OS-EXT-SRV-ATTR:user_data'] !== ''
      ? 'has user data, not written (it may hold secrets) and left as it is; to manage it, put it in a Secret and set spec.userDataSecretRef'
      : undefined,
  // Its imageRef could only name an image that is no more: no manifest can say that server (a rebuild could never restore it).
  unsafe: async (raw, s) => {
    const image = (raw as unknown as NovaServer).image;
    if (typeof image !== 'object' || !image.id || (await imageExists(s, image.id))) return undefined;
    return `not adopted: its image ${image.id} was deleted from Glance, so no imageRef can name it; declare it by hand (a bootVolume, or import it observe-only with managementPolicy: unmanaged)`;
  },
  skip: (raw) =>
    raw.image === '' || raw.image === undefined ? 'boots from a volume: not exported yet (declare it with bootVolume.volumeRef and import.adopt)' : undefined,
  spec(raw, s) {
    const server = raw as unknown as NovaServer;
    const spec: Record<string, unknown> = {};
    const description = text(server.description);
    if (description) spec.description = description;
    const flavorName = server.flavor?.original_name ?? '';
    const own = s.listed('Flavor').find((f) => f.name === flavorName);
    if (own) spec.flavorRef = { name: s.ref('Flavor', String(own.id)) };
    else spec.flavorName = flavorName;
    if (typeof server.image === 'object' && server.image.id) spec.imageRef = { name: s.ref('Image', server.image.id) };
    const ports = nics(
      server,
      (s.listed('Port') as unknown as RawPort[]).filter((p) => p.device_id === server.id),
    );
    spec.networks = ports.map((p) => ({
      networkRef: { name: s.ref('Network', p.network_id) },
      ...(p.fixed_ips?.[0] ? { fixedIP: p.fixed_ips[0].ip_address } : {}),
    }));
    const groups = [...new Set(ports.flatMap((p) => p.security_groups ?? []))].sort();
    const defaults = new Set(
      s
        .listed('SecurityGroup')
        .filter(isDefaultGroup)
        .map((g) => String(g.id)),
    );
    // Only the default group is what Neutron gives a NIC anyway: said by leaving the list out.
    if (groups.length > 0 && !(groups.length === 1 && defaults.has(groups[0]!)))
      spec.securityGroupRefs = groups.map((id) => ({ name: s.ref('SecurityGroup', id) }));
    if (server.key_name) {
      const key = s.listed('KeyPair').find((k) => k.name === server.key_name);
      if (key) spec.keyPairRef = { name: s.ref('KeyPair', String(key.id)) };
    }
    const volumes = (server['os-extended-volumes:volumes_attached'] ?? []).map((v) => v.id);
    if (volumes.length > 0) spec.volumes = volumes.map((id) => ({ volumeRef: { name: s.ref('Volume', id) } }));
    const metadata = Object.fromEntries(Object.entries(server.metadata ?? {}).filter(([k]) => !k.startsWith('kupenstack_')));
    if (Object.keys(metadata).length > 0) spec.metadata = metadata;
    if (server.tags && server.tags.length > 0) spec.tags = [...server.tags].sort();
    const power = powerStateOf(server);
    if (power && power !== 'running') spec.powerState = power;
    if (server.config_drive === true || String(server.config_drive).toLowerCase() === 'true') spec.configDrive = true;
    return spec;
  },
};
