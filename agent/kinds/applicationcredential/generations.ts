import { createHash } from 'node:crypto';
import type { Marker } from '../../ownership/marker.ts';
import type { AccessRule } from './access-rules.ts';
import { parseDuration } from '../../util/duration.ts';

/**
 * One credential of an ApplicationCredential manifest and the Keystone
 * service user that made it. A rotation adds a generation; the older ones
 * keep working until their grace ends. What the agent needs to decide that
 * later rides on the user (Keystone keeps unknown user attributes): when it
 * was made and with which rotateAfter, grace, annotation and Secret.
 */
export interface Generation {
  userId: string;
  marker: Marker;
  /** When it was made (ms). */
  made: number;
  record: GenerationRecord;
  /** Keystone's application credential; absent when a create stopped before it (kill -9) or it was deleted outside. */
  credential?: { id: string; roles: string[]; accessRules: AccessRule[]; unrestricted: boolean; expiresAt?: string };
}

/** What the user attribute `kupenstack_credential` holds (JSON text), as the manifest said when it was made. */
export interface GenerationRecord {
  made: string;
  /** spec.rotateAfter ('' for none). */
  rotateAfter: string;
  /** spec.gracePeriod, the grace its predecessors get. */
  grace: string;
  /** spec.expiresAt normalised ('' for none). */
  expiresAt: string;
  /** Hash of the kupenstack.io/rotate annotation ('' for none): the value itself is the user's, not ours to copy. */
  rotation: string;
  /** The Secret it was written to. */
  secret: string;
  /** Set once the Secret held it: only then may a client use it, and only then does it start its predecessors' grace. */
  delivered?: boolean;
}

export const recordAttribute = 'kupenstack_credential';
export const rotateAnnotation = 'kupenstack.io/rotate';
export const defaultGrace = '10m';

/** Why the current credential must be replaced, or ok. */
export type CredentialState = 'ok' | 'missing' | 'expired' | 'due' | 'undelivered';

export function rotationHash(annotation: string | undefined): string {
  return annotation === undefined ? '' : createHash('sha256').update(annotation).digest('hex').slice(0, 12);
}

/** An ISO time without fractions, so Keystone's `2027-01-01T00:00:00.000000` and the manifest's `2027-01-01T00:00:00Z` compare equal. */
export function normaliseTime(text: string | undefined): string {
  if (!text) return '';
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text}Z`);
  return Number.isNaN(ms) ? text : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

export function parseRecord(text: unknown): GenerationRecord | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const r = JSON.parse(text) as Partial<GenerationRecord>;
    if (typeof r.made !== 'string' || typeof r.secret !== 'string') return undefined;
    const base = {
      made: r.made,
      rotateAfter: r.rotateAfter ?? '',
      grace: r.grace ?? defaultGrace,
      expiresAt: r.expiresAt ?? '',
      rotation: r.rotation ?? '',
      secret: r.secret,
    };
    return r.delivered === true ? { ...base, delivered: true } : base;
  } catch {
    return undefined;
  }
}

/**
 * The Keystone expires_at of a credential made at `made`: the manifest's
 * expiresAt, or sooner rotateAfter + grace after it was made, so a
 * credential the agent could not rotate (stopped, cut off) still runs out.
 */
export function keystoneExpiry(record: Pick<GenerationRecord, 'rotateAfter' | 'grace' | 'expiresAt'>, made: number): string | undefined {
  const byRotation = record.rotateAfter ? made + parseDuration(record.rotateAfter) + parseDuration(record.grace) : undefined;
  const declared = record.expiresAt ? Date.parse(record.expiresAt) : undefined;
  const at = [byRotation, declared].filter((t): t is number => t !== undefined);
  return at.length ? normaliseTime(new Date(Math.min(...at)).toISOString()) : undefined;
}

/** Newest first. */
export function byAge(gens: readonly Generation[]): Generation[] {
  return [...gens].sort((a, b) => b.made - a.made || a.userId.localeCompare(b.userId));
}

/** The state of the newest generation at `now`; `delivered` = the Secret holds its id (undefined: cannot tell, as in plan --base). */
export function credentialState(current: Generation, now: number, delivered: boolean | undefined): CredentialState {
  const c = current.credential;
  if (!c) return 'missing';
  if (c.expiresAt && Date.parse(`${normaliseTime(c.expiresAt)}`) <= now) return 'expired';
  if (current.record.rotateAfter && current.made + parseDuration(current.record.rotateAfter) <= now) return 'due';
  if (delivered === false) return 'undelivered';
  return 'ok';
}

/**
 * When each older generation stops being needed. One that never reached the
 * Secret goes at once (nobody can hold its secret). One that did keeps
 * working until the grace of the first newer generation that reached the
 * Secret is over (from that one's making); with none, it is still what the
 * Secret holds and stays. Newest-first input; the first (current) is never
 * retired.
 */
export function retireTimes(newestFirst: readonly Generation[]): { gen: Generation; at: number }[] {
  const out: { gen: Generation; at: number }[] = [];
  for (let i = 1; i < newestFirst.length; i++) {
    const gen = newestFirst[i]!;
    if (!gen.credential || !gen.record.delivered) {
      out.push({ gen, at: 0 });
      continue;
    }
    const successor = newestFirst
      .slice(0, i)
      .reverse()
      .find((g) => g.record.delivered);
    out.push({ gen, at: successor ? successor.made + parseDuration(successor.record.grace) : Infinity });
  }
  return out;
}

/** Older generations whose grace is over at `now`: the ones to delete. */
export function pastGrace(newestFirst: readonly Generation[], now: number): Generation[] {
  return retireTimes(newestFirst)
    .filter((r) => r.at <= now)
    .map((r) => r.gen);
}
