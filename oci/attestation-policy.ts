import type { Expected, SignaturePolicy } from './signature-policy.ts';

/** What an attestation check is given (attestation-verify.ts); part of the DiskSource contract. */

export type Severity = 'LOW' | 'MEDIUM' | 'HIGH' | 'CRITICAL';

export interface AttestationConditions {
  /** SLSA provenance: the builder's id, exact or a regular expression matched whole. */
  builderId?: Expected;
  /** vuln: refused when a finding is at or above this severity. */
  maxSeverity?: Severity;
  /** vuln: refused when the scan finished more than this many days ago. */
  maxAgeDays?: number;
}

export interface AttestationRequirement {
  /** As the user wrote it (a URI or one of cosign's --type names), for messages. */
  predicateType: string;
  /** The statement predicate types that satisfy it. */
  accepted: string[];
  /** Who must have signed it: keys, or a keyless signer. */
  signer: SignaturePolicy;
  conditions: AttestationConditions;
}

export interface VerifiedAttestation {
  /** The statement's predicate type. */
  predicateType: string;
  /** Where it was found: `tag sha256-….att` or `referrer sha256:…`. */
  where: string;
  signer: string;
}

export const vulnPredicate = 'https://cosign.sigstore.dev/attestation/vuln/v1';
const slsa02 = 'https://slsa.dev/provenance/v0.2';
const slsa1 = 'https://slsa.dev/provenance/v1';

/** cosign attest --type names (cosign's pkg/cosign/attestation); `slsaprovenance` takes either SLSA version a builder writes. */
const aliases: Record<string, string[]> = {
  slsaprovenance: [slsa02, slsa1],
  slsaprovenance02: [slsa02],
  slsaprovenance1: [slsa1],
  spdx: ['https://spdx.dev/Document'],
  spdxjson: ['https://spdx.dev/Document'],
  cyclonedx: ['https://cyclonedx.org/bom'],
  vuln: [vulnPredicate],
};

/** The predicate types a written one accepts: an alias's, else the URI itself; undefined when it is neither. */
export function acceptedTypes(written: string): string[] | undefined {
  if (aliases[written]) return aliases[written];
  return /^[a-z][a-z0-9+.-]*:\S+$/i.test(written) ? [written] : undefined;
}

export const aliasNames = (): string[] => Object.keys(aliases);

/** SLSA provenance of any version (the builder id lives in a different place in each). */
export const isSlsaProvenance = (type: string): boolean => type.startsWith('https://slsa.dev/provenance/');
