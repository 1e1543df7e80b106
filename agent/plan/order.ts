import type { Change } from './plan.ts';

/** The order every plan is shown in: destructive changes first, then by address. */
export function orderChanges(changes: readonly Change[]): Change[] {
  return [...changes].sort((a, b) => Number(b.destructive) - Number(a.destructive) || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}
