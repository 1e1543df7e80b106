import {
  acceptedTypes,
  aliasNames,
  isSlsaProvenance,
  vulnPredicate,
  type AttestationConditions,
  type AttestationRequirement,
} from '../../../oci/attestation-policy.ts';
import type { DiskSource, ResolvedDisk } from '../../../oci/disk-source.ts';
import { OciError } from '../../../oci/errors.ts';
import type { Expected, SignaturePolicy } from '../../../oci/signature-policy.ts';
import { KupenstackError } from '../../errors.ts';
import type { ImageAttestation, ImageVerify } from '../../model/kinds.generated.ts';
import type { AdapterContext } from '../kit/adapter.ts';
import type { Manifest } from '../../model/manifest.ts';
import { policyOf, readerOf, signaturePolicy, type PolicyReader } from './verify.ts';

/**
 * `spec.verify.attestations` (and the Sync's `imageVerify` default): the
 * in-toto attestations a resolved version must carry besides its signature,
 * checked right after the signature, before anything is made in Glance. A
 * refusal is `image.attestation`: the Image is Stalled
 * (AttestationVerificationFailed, act/refusals.ts) until its spec or the
 * registry changes.
 */

const fail = (message: string, cause?: unknown): KupenstackError => new KupenstackError('image.attestation', message, cause === undefined ? {} : { cause });

function builderOf(c: NonNullable<ImageAttestation['conditions']>, where: string): Expected | undefined {
  if (c.builderId !== undefined && c.builderIdRegExp !== undefined)
    throw fail(`${where}: set at most one of conditions.builderId or conditions.builderIdRegExp`);
  if (c.builderId !== undefined) return { exact: c.builderId };
  if (c.builderIdRegExp === undefined) return undefined;
  try {
    new RegExp(c.builderIdRegExp);
  } catch (err) {
    throw fail(`${where}: conditions.builderIdRegExp is not a valid regular expression (${err instanceof Error ? err.message : String(err)})`, err);
  }
  return { regExp: c.builderIdRegExp };
}

/** The conditions, each only where the predicate type has what it reads (a builder id on a scan would never be checked). */
export function conditionsOf(a: ImageAttestation, accepted: string[], where: string): AttestationConditions {
  const c = a.conditions ?? {};
  const out: AttestationConditions = {};
  const builderId = builderOf(c, where);
  if (builderId) {
    if (!accepted.every(isSlsaProvenance)) throw fail(`${where}: conditions.builderId applies to SLSA provenance only, not ${a.predicateType}`);
    out.builderId = builderId;
  }
  if (c.maxSeverity !== undefined || c.maxAgeDays !== undefined) {
    if (!accepted.includes(vulnPredicate))
      throw fail(`${where}: conditions.maxSeverity and maxAgeDays apply to vulnerability scans (vuln) only, not ${a.predicateType}`);
    if (c.maxSeverity !== undefined) out.maxSeverity = c.maxSeverity;
    if (c.maxAgeDays !== undefined) out.maxAgeDays = c.maxAgeDays;
  }
  return out;
}

/** The policy's attestations as oci/ checks them: each with its signer (its own, else the image signature's). */
export async function attestationRequirements(reader: PolicyReader, policy: ImageVerify, namespace: string): Promise<AttestationRequirement[]> {
  const out: AttestationRequirement[] = [];
  for (const [i, a] of (policy.attestations ?? []).entries()) {
    const where = `${reader.where} attestations[${i}]`;
    const accepted = acceptedTypes(a.predicateType);
    if (!accepted) throw fail(`${where}: predicateType ${a.predicateType} is neither a URI nor one of ${aliasNames().join(', ')}`);
    if (a.publicKey !== undefined && a.keyless !== undefined) throw fail(`${where}: set at most one of publicKey or keyless`);
    const own = a.publicKey !== undefined ? { publicKey: a.publicKey } : a.keyless !== undefined ? { keyless: a.keyless } : undefined;
    const signed =
      own ?? (policy.publicKey !== undefined ? { publicKey: policy.publicKey } : policy.keyless !== undefined ? { keyless: policy.keyless } : undefined);
    if (!signed) throw fail(`${where}: names no signer (publicKey or keyless), and the policy has none to default to`);
    let signer: SignaturePolicy;
    try {
      signer = await signaturePolicy({ ...reader, where }, signed, namespace);
    } catch (err) {
      if (err instanceof KupenstackError && err.code === 'image.signature') throw fail(err.message, err);
      throw err;
    }
    out.push({ predicateType: a.predicateType, accepted, signer, conditions: conditionsOf(a, accepted, where) });
  }
  return out;
}

/** A stable name of the requirements for the per-run memo (never the secret values themselves). */
function requirementsKey(rs: AttestationRequirement[]): string {
  return JSON.stringify(
    rs.map((r) => [
      r.accepted,
      r.conditions,
      r.signer.keyless
        ? [r.signer.keyless.name, r.signer.keyless.identity, r.signer.keyless.issuer, r.signer.keyless.transparencyLog]
        : r.signer.keys.map((k) => k.key.export({ type: 'spki', format: 'der' }).toString('base64')),
    ]),
  );
}

/** Throws `image.attestation` (the reference, each missing or failing attestation and why) unless every required one is met. */
export async function verifyAttested(m: Manifest, ctx: AdapterContext, source: DiskSource, disk: ResolvedDisk): Promise<void> {
  const policy = policyOf(m, ctx);
  if (!policy?.attestations || policy.attestations.length === 0) return;
  const reader = readerOf(m, ctx);
  const requirements = await attestationRequirements(reader, policy, ctx.namespace);
  if (!source.verifyAttestations) throw new KupenstackError('internal', `${reader.where}: this image source cannot check attestations`);
  const key = `Image:attest:${disk.reference}:${requirementsKey(requirements)}`;
  try {
    await ctx.memo(key, () => source.verifyAttestations!(disk, requirements, ctx.signal));
  } catch (err) {
    if (err instanceof OciError && err.code === 'oci.attestation') throw fail(`${reader.where}: ${err.message}`, err);
    throw err;
  }
}
