import { parseDescriptionMarker, type Marker } from '../../ownership/marker.ts';
import { openstackName, pick, type KindAdapter, type Remote } from '../kit/adapter.ts';
import {
  describedUpdate,
  neutronDescription,
  observeNeutron,
  observeNeutronCloud,
  observeNeutronSome,
  putTags,
  remarkNeutron,
  neutronRemote,
} from '../kit/neutron.ts';
import { neutronOwnership } from '../kit/ownership.ts';

const toRemote = (raw: Record<string, unknown>, description: string): Remote =>
  neutronRemote(raw, description, {
    admin_state_up: raw.admin_state_up,
    mtu: raw.mtu,
    port_security_enabled: raw.port_security_enabled,
    shared: raw.shared,
    'router:external': raw['router:external'],
    dns_domain: raw.dns_domain,
    availability_zone_hints: raw.availability_zone_hints,
    'provider:network_type': raw['provider:network_type'],
    'provider:physical_network': raw['provider:physical_network'],
    'provider:segmentation_id': raw['provider:segmentation_id'],
  });

const descriptionOf = (desired: Record<string, unknown>): string => (typeof desired.description === 'string' ? desired.description : '');

/** Tags are a follow-up (Zed takes none in a create); the marker rides in the description. */
function createBody(desired: Record<string, unknown>, marker: Marker): Record<string, unknown> {
  const { tags: _tags, ...body } = desired;
  return { ...body, description: neutronDescription(desired, marker) };
}

export const network: KindAdapter = {
  kind: 'Network',
  ownership: neutronOwnership('a network'),
  service: 'network',
  fields: {
    name: 'update',
    description: 'update',
    admin_state_up: 'update',
    mtu: 'update',
    port_security_enabled: 'update',
    shared: 'update',
    'router:external': 'update',
    dns_domain: 'update',
    availability_zone_hints: 'replace',
    'provider:network_type': 'replace',
    'provider:physical_network': 'replace',
    'provider:segmentation_id': 'replace',
    tags: 'update',
  },

  remark: remarkNeutron('networks', 'network'),

  observe: (ctx) => observeNeutron(ctx, 'networks', toRemote),

  observeSome: (ctx, wanted) => observeNeutronSome(ctx, 'networks', wanted, toRemote),

  observeCloud: (ctx) => observeNeutronCloud(ctx, 'networks', toRemote),

  desired(m) {
    const spec = m.spec;
    const provider = (spec.provider ?? {}) as Record<string, unknown>;
    const out: Record<string, unknown> = {
      name: openstackName(m),
      ...pick(spec, {
        description: 'description',
        adminStateUp: 'admin_state_up',
        mtu: 'mtu',
        portSecurityEnabled: 'port_security_enabled',
        shared: 'shared',
        external: 'router:external',
        dnsDomain: 'dns_domain',
        availabilityZoneHints: 'availability_zone_hints',
      }),
      ...pick(provider, { networkType: 'provider:network_type', physicalNetwork: 'provider:physical_network', segmentationId: 'provider:segmentation_id' }),
    };
    if (Array.isArray(spec.tags)) out.tags = [...(spec.tags as string[])].sort();
    return out;
  },

  bulkCreate: {
    collection: 'networks',
    body: (_ctx, _m, desired, marker) => createBody(desired, marker),
    remote: (raw, desired) => toRemote(raw, descriptionOf(desired)),
    // Neutron lets only an admin share a network, make it external or choose its segment: such a create is judged with the project's token.
    scope: (_ctx, _m, desired) =>
      desired.shared === true || desired['router:external'] === true || Object.keys(desired).some((k) => k.startsWith('provider:')) ? 'project' : 'admin',
  },

  async create(ctx, _m, desired, marker) {
    const res = await ctx.apis.network.post<{ network: Record<string, unknown> }>('/networks', { network: createBody(desired, marker) });
    return toRemote(res.network, descriptionOf(desired));
  },

  async update(ctx, remote, changes) {
    const { tags, ...rest } = changes;
    if (Object.keys(rest).length > 0) await ctx.apis.network.put(`/networks/${remote.id}`, { network: describedUpdate(remote, rest) });
    if ('tags' in changes) await putTags(ctx, 'networks', remote.id, tags);
  },

  async delete(ctx, remote) {
    await ctx.apis.network.remove(`/networks/${remote.id}`);
  },

  async get(ctx, id) {
    const res = await ctx.apis.network.find<{ network: Record<string, unknown> }>(`/networks/${id}`);
    return res ? toRemote(res.network, parseDescriptionMarker(res.network.description).description) : undefined;
  },

  async find(ctx, filter) {
    const items = await ctx.apis.network.list<Record<string, unknown>>('/networks', 'networks', {
      name: filter.name,
      description: filter.description,
      tags: filter.tags,
    });
    return items.map((raw) => toRemote(raw, parseDescriptionMarker(raw.description).description));
  },
};
