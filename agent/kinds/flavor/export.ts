import type { ExportScope, KindExport } from '../kit/export.ts';
import { text } from '../kit/export.ts';

type RawFlavor = Record<string, unknown>;

/** Every private flavor of the cloud with its access list: one list, one access read per private flavor, once per export. */
function privateFlavors(s: ExportScope): Promise<{ raw: RawFlavor; access: string[] }[]> {
  return s.memo('Flavor:private', async () => {
    const all = await s.compute.list<RawFlavor>('/flavors/detail', 'flavors', { is_public: 'false' });
    return Promise.all(
      all.map(async (raw) => ({
        raw,
        access: (await s.compute.get<{ flavor_access: { tenant_id: string }[] }>(`/flavors/${String(raw.id)}/os-flavor-access`)).flavor_access.map(
          (a) => a.tenant_id,
        ),
      })),
    );
  });
}

/**
 * A private flavor is the project's when the project alone has access to it
 * (what the Flavor kind adopts: kinds/flavor/adapter.ts). Public flavors are the
 * cloud's: VMs name them (`flavorName`). A private flavor shared by several
 * projects is referenced as an observe-only import where a VM uses it.
 */
export const flavorExport: KindExport = {
  kind: 'Flavor',
  list: async (s) => (await privateFlavors(s)).filter((f) => f.access.length === 1 && f.access[0] === s.projectId).map((f) => f.raw),
  spec(raw) {
    const spec: Record<string, unknown> = { vcpus: raw.vcpus, ram: raw.ram, disk: raw.disk };
    const description = text(raw.description);
    if (description) spec.description = description;
    if (Number(raw.swap) > 0) spec.swap = Number(raw.swap);
    if (Number(raw['OS-FLV-EXT-DATA:ephemeral']) > 0) spec.ephemeral = raw['OS-FLV-EXT-DATA:ephemeral'];
    if (typeof raw.rxtx_factor === 'number' && raw.rxtx_factor !== 1) spec.rxtxFactor = raw.rxtx_factor;
    const extra = (raw.extra_specs ?? {}) as Record<string, string>;
    if (Object.keys(extra).length > 0) spec.extraSpecs = extra;
    return spec;
  },
};
