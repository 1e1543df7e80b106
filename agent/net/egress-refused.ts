import { KupenstackError } from '../errors.ts';

/**
 * A fetch the egress policy refused before any connection was made. Terminal
 * for the object (Stalled, reason EgressRefused) until its spec or the
 * admin's rules change: retrying cannot make the address acceptable.
 */
export class EgressRefused extends KupenstackError {
  /** The policy's rule that refused it (`loopback`, `scheme`), for tools. */
  readonly rule: string;

  constructor(message: string, rule: string, options?: { cause?: unknown }) {
    super('egress.refused', message, options);
    this.rule = rule;
  }
}

/** The refusal somewhere in an error's cause chain (the OCI client wraps connection errors). */
export function egressRefusalIn(err: unknown): EgressRefused | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof EgressRefused) return e;
  }
  return undefined;
}
