import type { KindAdapter } from './adapter.ts';
import { network } from './network.ts';

/** One adapter per kind that lives in OpenStack. */
export const adapters: ReadonlyMap<string, KindAdapter> = new Map(
  [
    network,
  ].map((a) => [a.kind, a]),
);
