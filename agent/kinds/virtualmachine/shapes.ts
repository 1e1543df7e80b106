import type { VirtualMachineSpec } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';

/** The VM kind's vocabulary: the Neutron port and NIC shapes it reads, the metadata key of its image, small value helpers. */

export const metaImage = 'kupenstack_image';

export interface NeutronPort {
  id: string;
  network_id: string;
  device_id: string;
  mac_address: string;
  description?: string;
  security_groups?: string[];
}

export type Nic = { uuid: string } | { port: string };

// The validator has checked the spec against the schema.
export const specOf = (m: Manifest): VirtualMachineSpec => m.spec;

export const uniqSorted = (xs: readonly string[]): string[] => [...new Set(xs)].sort();

export const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export const record = (v: unknown): Record<string, string> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, string>) : {});

export function sortedRecord(r: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
