import { verify as verifySignatureBytes, type KeyObject } from 'node:crypto';
import { bundleFromJSON, type Bundle } from '@sigstore/bundle';
import { toSignedEntity, Verifier, type TrustMaterial } from '@sigstore/verify';
import type { RegistryClient } from './client.ts';
import { parseDigest } from './digest.ts';
import { OciError } from './errors.ts';
import type { SignaturePolicy, TrustedKey, VerifiedSignature } from './signature-policy.ts';
import { findSignatures, type FoundSignature } from './signatures.ts';

/**
 * Checks that a manifest carries a cosign signature by a trusted public key,
 * over that very digest, before any of its bytes are used.
 * - Classic signatures (simple-signing payload, signature in an annotation):
 *   node:crypto checks the ECDSA/RSA/ed25519 signature over the payload,
 *   then the payload's `critical.image.docker-manifest-digest` must be the
 *   digest being imported (else a valid signature of another image could be
 *   copied next to this one).
 * - Sigstore bundles (cosign v3): @sigstore/verify checks the signature with
 *   the key as the only trust root; the signed in-toto statement's subject
 *   (DSSE) or the message digest must be the digest being imported. The key
 *   is the trust: transparency-log entries and timestamps a bundle may carry
 *   are not required (no Rekor key is configured with a key policy).
 */

/**
 * `digests`: the digests a signature may cover (the image manifest's, and
 * the index's when the platform was picked from one: cosign signs what the
 * tag names). Throws `oci.signature` naming `reference` and every reason.
 */
export async function verifyCosign(client: RegistryClient, repository: string, reference: string, digests: string[], policy: SignaturePolicy, signal?: AbortSignal): Promise<VerifiedSignature> {
  if (policy.keys.length === 0) throw new OciError('oci.signature', `${reference}: the signature policy names no public key`);
  const reasons: string[] = [];
  const looked: string[] = [];
  for (const digest of digests) {
    const { found, looked: where } = await findSignatures(client, repository, digest, signal);
    looked.push(...where);
    for (const sig of found) {
      const verdict = checkSignature(sig, digest, policy.keys);
      if (verdict.ok) return { digest, where: sig.where, key: verdict.key };
      reasons.push(`${sig.where}: ${verdict.reason}`);
    }
  }
  const keys = policy.keys.map((k) => k.name).join(', ');
  if (reasons.length === 0) {
    throw new OciError('oci.signature', `${reference} is not signed: no cosign signature in ${looked.join(', ')}; sign it (cosign sign --key …) or remove spec.verify`);
  }
  throw new OciError('oci.signature', `${reference}: refused, no signature verifies with the trusted key (${keys}): ${reasons.join('; ')}`);
}

/** cosign's predicate type of an image signature (cosign v3, pkg/types). */
const cosignSignPredicate = 'https://sigstore.dev/cosign/sign/v1';

export type Verdict = { ok: true; key: string } | { ok: false; reason: string };

/** One found signature against the policy's keys and the digest being imported (exported for the unit tests). */
export function checkSignature(sig: FoundSignature, digest: string, keys: TrustedKey[]): Verdict {
  return sig.kind === 'simple-signing' ? checkSimpleSigning(sig.payload, sig.signature, digest, keys) : checkBundle(sig.bundle, digest, keys);
}

function checkSimpleSigning(payload: Buffer, signature: Buffer, digest: string, keys: TrustedKey[]): Verdict {
  const key = keys.find((k) => verifyBytes(payload, signature, k.key));
  if (!key) return { ok: false, reason: 'signed by another key' };
  let signed: unknown;
  try {
    signed = (JSON.parse(payload.toString('utf8')) as { critical?: { image?: { 'docker-manifest-digest'?: unknown } } }).critical?.image?.['docker-manifest-digest'];
  } catch {
    return { ok: false, reason: 'the signed payload is not JSON' };
  }
  if (signed !== digest) return { ok: false, reason: `the signature is for ${String(signed)}, not ${digest} (a signature copied from another image)` };
  return { ok: true, key: key.name };
}

/** ECDSA/RSA sign a sha256 of the data; ed25519 signs the data itself. */
function verifyBytes(data: Buffer, signature: Buffer, key: KeyObject): boolean {
  try {
    return verifySignatureBytes(key.asymmetricKeyType === 'ed25519' ? null : 'sha256', data, key, signature);
  } catch {
    return false;
  }
}

function checkBundle(json: unknown, digest: string, keys: TrustedKey[]): Verdict {
  let bundle: Bundle;
  try {
    bundle = bundleFromJSON(json);
  } catch (err) {
    return { ok: false, reason: `not a valid sigstore bundle (${err instanceof Error ? err.message : String(err)})` };
  }
  if (bundle.verificationMaterial.content.$case !== 'publicKey') return { ok: false, reason: 'a keyless (certificate) bundle; this policy trusts keys only' };
  const covered = bundleSubject(bundle);
  if (bundle.content.$case !== 'dsseEnvelope') return { ok: false, reason: covered.other ?? 'not a cosign image signature' };
  // The key is the trust root: log entries and timestamps are not what is checked here.
  const entity = { ...toSignedEntity(bundle), tlogEntries: [], timestamps: [] };
  const key = keys.find((k) => {
    try {
      new Verifier(keyTrust(k.key), { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 }).verify(entity);
      return true;
    } catch {
      return false;
    }
  });
  if (!key) return { ok: false, reason: 'signed by another key' };
  if (covered.other) return { ok: false, reason: covered.other };
  const { hex } = parseDigest(digest);
  if (!covered.sha256.includes(hex)) return { ok: false, reason: `the signature is for ${covered.sha256.map((h) => `sha256:${h}`).join(', ') || 'no image digest'}, not ${digest} (a signature copied from another image)` };
  return { ok: true, key: key.name };
}

/** What a bundle's signature covers: the in-toto statement's subjects (DSSE), or the signed message digest. */
function bundleSubject(bundle: Bundle): { sha256: string[]; other?: string } {
  const content = bundle.content;
  if (content.$case === 'dsseEnvelope') {
    try {
      const statement = JSON.parse(content.dsseEnvelope.payload.toString('utf8')) as { predicateType?: unknown; subject?: Array<{ digest?: Record<string, unknown> }> };
      // An attestation (SBOM, provenance) by the same key is not a signature of the image.
      if (statement.predicateType !== cosignSignPredicate) return { sha256: [], other: `an attestation (${String(statement.predicateType)}), not a cosign signature` };
      return { sha256: (statement.subject ?? []).map((s) => s.digest?.sha256).filter((h): h is string => typeof h === 'string') };
    } catch {
      return { sha256: [] };
    }
  }
  // cosign signs images with DSSE statements; a message signature is over some other artifact.
  return { sha256: [], other: 'a message signature, not a cosign image signature (an in-toto statement)' };
}

function keyTrust(key: KeyObject): TrustMaterial {
  return { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [], publicKey: () => ({ publicKey: key, validFor: () => true }) };
}
