import { X509Certificate } from 'node:crypto';
import { bundleFromJSON, type Bundle } from '@sigstore/bundle';
import { toSignedEntity, Verifier } from '@sigstore/verify';
import { provenanceRefusal, scanFinishedOf, vulnRefusal } from './attestation-conditions.ts';
import { isSlsaProvenance, vulnPredicate, type AttestationRequirement, type VerifiedAttestation } from './attestation-policy.ts';
import { findAttestations, type FoundAttestation } from './attestations.ts';
import type { RegistryClient } from './client.ts';
import { keyTrust, leafOnly, verifyBytes, verifyKeyless, type Verdict } from './cosign-verify.ts';
import { pae, parseEnvelope, parseStatement, subjectMismatch, type Statement } from './dsse.ts';
import { OciError } from './errors.ts';
import type { SignaturePolicy } from './signature-policy.ts';

/**
 * Checks that a manifest carries every attestation a policy requires
 * (`cosign attest`: an in-toto statement in a DSSE envelope), before any of
 * its bytes are used. For each requirement, among the attestations of its
 * predicate type: the envelope's signature must verify with the
 * requirement's signer (the DSSE pre-authentication encoding, by
 * @sigstore/verify for bundles and node:crypto for classic envelopes, the
 * keyless checks of cosign-verify.ts), the statement's subject must be the
 * digest it was found for, then the predicate must meet the conditions.
 */

/** One attestation whose envelope was read: its statement (not yet trusted) and how to check its signer. */
export interface Candidate {
  where: string;
  /** The digest it was found for (the image manifest's, or the index's). */
  digest: string;
  statement: Statement;
  signedBy(signer: SignaturePolicy): Verdict;
}

/** Throws `oci.attestation` naming `reference` and each missing or failing attestation; `digests` as verifyCosign's. */
export async function verifyAttestations(
  client: RegistryClient,
  repository: string,
  reference: string,
  digests: string[],
  requirements: AttestationRequirement[],
  signal?: AbortSignal,
  now = Date.now(),
): Promise<VerifiedAttestation[]> {
  const candidates: Candidate[] = [];
  const looked: string[] = [];
  for (const digest of digests) {
    const { found, looked: where } = await findAttestations(client, repository, digest, signal);
    looked.push(...where);
    for (const f of found) {
      const c = candidateOf(f, digest);
      if (c) candidates.push(c);
    }
  }
  const verified: VerifiedAttestation[] = [];
  const failures: string[] = [];
  for (const r of requirements) {
    const outcome = judge(r, candidates, looked, now);
    if ('refused' in outcome) failures.push(`attestation ${describe(r)}: ${outcome.refused}`);
    else verified.push(outcome);
  }
  if (failures.length > 0) throw new OciError('oci.attestation', `${reference}: refused, ${failures.join('; ')}`);
  return verified;
}

const describe = (r: AttestationRequirement): string =>
  r.accepted.includes(r.predicateType) ? r.predicateType : `${r.predicateType} (${r.accepted.join(' or ')})`;

/**
 * One requirement against the candidates: absent, wrong signer, another
 * image's, or failing its conditions; else the attestation that meets it.
 * The newest verified vulnerability scan is the one judged (an older clean
 * scan does not hide a newer finding); any verified provenance may meet it.
 */
export function judge(r: AttestationRequirement, candidates: Candidate[], looked: string[], now: number): VerifiedAttestation | { refused: string } {
  const ofType = candidates.filter((c) => r.accepted.includes(c.statement.predicateType));
  if (ofType.length === 0) return { refused: `absent: no attestation of this type in ${looked.join(', ')}` };
  const reasons: string[] = [];
  const trusted: Array<{ c: Candidate; signer: string }> = [];
  for (const c of ofType) {
    const verdict = c.signedBy(r.signer);
    if (!verdict.ok) reasons.push(`${c.where}: wrong signer: ${verdict.reason}`);
    else {
      const other = subjectMismatch(c.statement, c.digest);
      if (other) reasons.push(`${c.where}: ${other}`);
      else trusted.push({ c, signer: verdict.key });
    }
  }
  if (trusted.length === 0) return { refused: reasons.join('; ') };
  const vuln = r.accepted.includes(vulnPredicate);
  const judged = vuln
    ? [trusted.reduce((a, b) => ((scanFinishedOf(b.c.statement.predicate) ?? -Infinity) > (scanFinishedOf(a.c.statement.predicate) ?? -Infinity) ? b : a))]
    : trusted;
  const refusals: string[] = [];
  for (const { c, signer } of judged) {
    const p = c.statement.predicate;
    const refused = vuln ? vulnRefusal(p, r.conditions, now) : isSlsaProvenance(c.statement.predicateType) ? provenanceRefusal(p, r.conditions) : undefined;
    if (refused === undefined) return { predicateType: c.statement.predicateType, where: c.where, signer };
    refusals.push(`${c.where}: ${refused}`);
  }
  return { refused: refusals.join('; ') };
}

/** The statement of a found attestation and its signer check; undefined when it is not an in-toto statement (nothing to require of it). */
export function candidateOf(f: FoundAttestation, digest: string): Candidate | undefined {
  try {
    if (f.kind === 'envelope') {
      const envelope = parseEnvelope(f.envelope);
      const statement = parseStatement(envelope.payloadType, envelope.payload);
      return { where: f.where, digest, statement, signedBy: (s) => envelopeSignedBy(envelope, f.certificate, s) };
    }
    const bundle = bundleFromJSON(leafOnly(f.bundle));
    if (bundle.content.$case !== 'dsseEnvelope') return undefined;
    const { payloadType, payload } = bundle.content.dsseEnvelope;
    return { where: f.where, digest, statement: parseStatement(payloadType, payload), signedBy: (s) => bundleSignedBy(bundle, s) };
  } catch {
    return undefined;
  }
}

function bundleSignedBy(bundle: Bundle, signer: SignaturePolicy): Verdict {
  const material = bundle.verificationMaterial.content.$case;
  if (signer.keyless) {
    if (material === 'publicKey') return { ok: false, reason: 'signed with a key, not a certificate; this policy trusts keyless signers only' };
    return verifyKeyless(toSignedEntity(bundle), signer.keyless);
  }
  if (material !== 'publicKey') return { ok: false, reason: 'a keyless (certificate) bundle; this policy trusts keys only' };
  // The key is the trust root: log entries and timestamps are not what is checked here.
  const entity = { ...toSignedEntity(bundle), tlogEntries: [], timestamps: [] };
  const key = signer.keys.find((k) => {
    try {
      new Verifier(keyTrust(k.key), { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 }).verify(entity);
      return true;
    } catch {
      return false;
    }
  });
  return key ? { ok: true, key: key.name } : { ok: false, reason: `signed by another key, not ${signer.keys.map((k) => k.name).join(', ')}` };
}

function envelopeSignedBy(envelope: ReturnType<typeof parseEnvelope>, certificate: string | undefined, signer: SignaturePolicy): Verdict {
  const signed = pae(envelope.payloadType, envelope.payload);
  if (!signer.keyless) {
    const key = signer.keys.find((k) => envelope.signatures.some((s) => verifyBytes(signed, s.sig, k.key)));
    return key ? { ok: true, key: key.name } : { ok: false, reason: `signed by another key, not ${signer.keys.map((k) => k.name).join(', ')}` };
  }
  if (!certificate) return { ok: false, reason: 'signed with a key, not a certificate; this policy trusts keyless signers only' };
  if (signer.keyless.transparencyLog)
    return {
      ok: false,
      reason:
        'a classic keyless attestation (the sha256-….att tag), whose transparency-log entry KupenStack does not check; ' +
        "attest with cosign v3's default sigstore bundle, or set keyless.transparencyLog: false",
    };
  let bundle: Bundle;
  try {
    const der = new X509Certificate(certificate).raw;
    bundle = bundleFromJSON({
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: { certificate: { rawBytes: der.toString('base64') }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } },
      dsseEnvelope: {
        payloadType: envelope.payloadType,
        payload: envelope.payload.toString('base64'),
        signatures: envelope.signatures.slice(0, 1).map((s) => ({ keyid: s.keyid, sig: s.sig.toString('base64') })),
      },
    });
  } catch (err) {
    return { ok: false, reason: `the classic attestation cannot be read as a certificate signature (${err instanceof Error ? err.message : String(err)})` };
  }
  return verifyKeyless(toSignedEntity(bundle), signer.keyless);
}
