import type { AttestationConditions, Severity } from './attestation-policy.ts';
import type { Expected } from './signature-policy.ts';

/**
 * The conditions on a verified statement's predicate: the SLSA builder's id,
 * and a vulnerability scan's findings and age (cosign's vuln predicate, whose
 * `scanner.result` is the scanner's own report: Trivy's, Grype's). Each
 * check answers the reason it refuses, or undefined.
 */

const order: Severity[] = ['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'];
const dayMs = 24 * 60 * 60 * 1000;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined);

/** SLSA v1 `runDetails.builder.id`; v0.1 and v0.2 `builder.id`. */
export function builderIdOf(predicate: unknown): string | undefined {
  const p = obj(predicate);
  const id = obj(obj(obj(p?.runDetails)?.builder))?.id ?? obj(p?.builder)?.id;
  return typeof id === 'string' ? id : undefined;
}

function matches(want: Expected, got: string): boolean {
  return 'exact' in want ? got === want.exact : new RegExp(`^(?:${want.regExp})$`).test(got);
}

export function provenanceRefusal(predicate: unknown, c: AttestationConditions): string | undefined {
  if (!c.builderId) return undefined;
  const id = builderIdOf(predicate);
  const wanted = 'exact' in c.builderId ? c.builderId.exact : `a match of /${c.builderId.regExp}/`;
  if (id === undefined) return `builder mismatch: the provenance names no builder id, not ${wanted}`;
  return matches(c.builderId, id) ? undefined : `builder mismatch: built by ${id}, not ${wanted}`;
}

export interface Finding {
  id: string;
  severity: Severity;
}

const idKeys = ['VulnerabilityID', 'vulnerabilityID', 'vulnerabilityId', 'id', 'ID', 'cve'];

/**
 * Every finding of a known severity in the scanner's report: any object with
 * a Severity (Trivy) or severity (Grype's match.vulnerability) field, at any
 * depth (bounded); NEGLIGIBLE and UNKNOWN severities are below LOW.
 */
export function findingsOf(predicate: unknown): Finding[] {
  const out: Finding[] = [];
  const walk = (v: unknown, depth: number): void => {
    if (depth > 16 || out.length > 100_000) return;
    if (Array.isArray(v)) return v.forEach((x) => walk(x, depth + 1));
    const o = obj(v);
    if (!o) return;
    const raw = o.Severity ?? o.severity;
    const severity = (typeof raw === 'string' ? raw.toUpperCase() : '') as Severity;
    if (order.includes(severity)) {
      const id = idKeys.map((k) => o[k]).find((x) => typeof x === 'string');
      out.push({ id: typeof id === 'string' ? id : 'a finding without an id', severity });
    }
    for (const x of Object.values(o)) if (typeof x === 'object') walk(x, depth + 1);
  };
  walk(obj(obj(predicate)?.scanner)?.result, 0);
  return out;
}

/** When the scan finished (metadata.scanFinishedOn), ms since the epoch. */
export function scanFinishedOf(predicate: unknown): number | undefined {
  const at = obj(obj(predicate)?.metadata)?.scanFinishedOn;
  const ms = typeof at === 'string' ? Date.parse(at) : NaN;
  return Number.isNaN(ms) ? undefined : ms;
}

export function vulnRefusal(predicate: unknown, c: AttestationConditions, now: number): string | undefined {
  if (c.maxAgeDays !== undefined) {
    const finished = scanFinishedOf(predicate);
    if (finished === undefined) return 'the scan states no finish time (metadata.scanFinishedOn), so its age is unknown';
    const days = Math.floor((now - finished) / dayMs);
    if (now - finished > c.maxAgeDays * dayMs) return `scan ${days} days old (finished ${new Date(finished).toISOString()}; at most ${c.maxAgeDays} allowed)`;
  }
  if (c.maxSeverity !== undefined) {
    const floor = order.indexOf(c.maxSeverity);
    const bad = findingsOf(predicate).filter((f) => order.indexOf(f.severity) >= floor);
    if (bad.length > 0) {
      const worst = bad.reduce((a, b) => (order.indexOf(b.severity) > order.indexOf(a.severity) ? b : a));
      const more = bad.length > 1 ? ` and ${bad.length - 1} more at or above ${c.maxSeverity}` : '';
      return `${worst.severity} finding ${worst.id}${more}`;
    }
  }
  return undefined;
}
