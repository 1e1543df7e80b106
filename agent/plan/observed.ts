import { createHash } from 'node:crypto';
import type { Remote } from '../kinds/kit/adapter.ts';
import { KupenstackError } from '../errors.ts';
import { stableJson } from '../ownership/marker.ts';

/**
 * What a plan was computed against: per address, a hash of the observed
 * object (id, status, fields, marker). A saved plan carries it; `apply --plan`
 * refuses to act when the cloud no longer looks like this.
 */
export type ObservedState = Record<string, string>;

export function observedHash(remote: Remote): string {
  const seen = { id: remote.id, status: remote.status ?? null, fields: remote.fields, marker: remote.marker ?? null };
  return createHash('sha256').update(stableJson(seen)).digest('hex').slice(0, 16);
}

export class StalePlanError extends KupenstackError {
  readonly differences: string[];

  constructor(differences: string[]) {
    const shown = differences.slice(0, 10).join('; ');
    const more = differences.length > 10 ? ` and ${differences.length - 10} more` : '';
    super(
      'plan.stale',
      `the plan is stale: OpenStack changed since it was computed (${shown}${more}); nothing was applied. Run plan again and review the new plan`,
    );
    this.differences = differences;
  }
}

/** Addresses whose observed object differs between the plan and now. */
export function compareObserved(planned: ObservedState, now: ObservedState): string[] {
  const out: string[] = [];
  for (const [address, hash] of Object.entries(planned)) {
    if (!(address in now)) out.push(`${address} is gone`);
    else if (now[address] !== hash) out.push(`${address} changed`);
  }
  for (const address of Object.keys(now)) if (!(address in planned)) out.push(`${address} appeared`);
  return out.sort();
}
