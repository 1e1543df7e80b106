import { createHash, verify as verifySignatureBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { bundleFromJSON, type Bundle } from '@sigstore/bundle';
import { toSignedEntity, Verifier, type SignedEntity, type TrustMaterial } from '@sigstore/verify';
import type { RegistryClient } from './client.ts';
import { parseDigest } from './digest.ts';
import { OciError } from './errors.ts';
import type { Expected, KeylessPolicy, SignaturePolicy, TrustedKey, VerifiedSignature } from './signature-policy.ts';
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
 * - Keyless (a certificate in the bundle, or in the classic signature's
 *   `dev.sigstore.cosign/certificate` annotation): @sigstore/verify checks
 *   the chain against the certificate authorities of the user's trusted
 *   root, the signature with the certificate's key, and (unless the policy
 *   turns it off) a transparency-log entry and an SCT of the root's logs;
 *   then the certificate's identity (SAN) and issuer must be the policy's.
 */

/**
 * `digests`: the digests a signature may cover (the image manifest's, and
 * the index's when the platform was picked from one: cosign signs what the
 * tag names). Throws `oci.signature` naming `reference` and every reason.
 */
export async function verifyCosign(
  client: RegistryClient,
  repository: string,
  reference: string,
  digests: string[],
  policy: SignaturePolicy,
  signal?: AbortSignal,
): Promise<VerifiedSignature> {
  if (policy.keys.length === 0 && !policy.keyless)
    throw new OciError('oci.signature', `${reference}: the signature policy names no public key and no keyless signer`);
  const reasons: string[] = [];
  const looked: string[] = [];
  for (const digest of digests) {
    const { found, looked: where } = await findSignatures(client, repository, digest, signal);
    looked.push(...where);
    for (const sig of found) {
      const verdict = checkSignature(sig, digest, policy.keys, policy.keyless);
      if (verdict.ok) return { digest, where: sig.where, key: verdict.key };
      reasons.push(`${sig.where}: ${verdict.reason}`);
    }
  }
  if (reasons.length === 0) {
    throw new OciError(
      'oci.signature',
      `${reference} is not signed: no cosign signature in ${looked.join(', ')}; sign it (cosign sign --key …) or remove spec.verify`,
    );
  }
  const trusted = policy.keyless ? `the trusted signer (${describeSigner(policy.keyless)})` : `the trusted key (${policy.keys.map((k) => k.name).join(', ')})`;
  throw new OciError('oci.signature', `${reference}: refused, no signature verifies with ${trusted}: ${reasons.join('; ')}`);
}

/** cosign's predicate type of an image signature (cosign v3, pkg/types). */
const cosignSignPredicate = 'https://sigstore.dev/cosign/sign/v1';

export type Verdict = { ok: true; key: string } | { ok: false; reason: string };

/** One found signature against the policy's keys (or keyless signer) and the digest being imported (exported for the unit tests). */
export function checkSignature(sig: FoundSignature, digest: string, keys: TrustedKey[], keyless?: KeylessPolicy): Verdict {
  if (keyless)
    return sig.kind === 'simple-signing'
      ? checkSimpleSigningKeyless(sig.payload, sig.signature, sig.certificate, digest, keyless)
      : checkBundleKeyless(sig.bundle, digest, keyless);
  return sig.kind === 'simple-signing' ? checkSimpleSigning(sig.payload, sig.signature, digest, keys) : checkBundle(sig.bundle, digest, keys);
}

function checkSimpleSigning(payload: Buffer, signature: Buffer, digest: string, keys: TrustedKey[]): Verdict {
  const key = keys.find((k) => verifyBytes(payload, signature, k.key));
  if (!key) return { ok: false, reason: 'signed by another key' };
  return payloadCovers(payload, digest, key.name);
}

/** The simple-signing payload names the digest it signs: it must be the one being imported. */
function payloadCovers(payload: Buffer, digest: string, signer: string): Verdict {
  let signed: unknown;
  try {
    signed = (JSON.parse(payload.toString('utf8')) as { critical?: { image?: { 'docker-manifest-digest'?: unknown } } }).critical?.image?.[
      'docker-manifest-digest'
    ];
  } catch {
    return { ok: false, reason: 'the signed payload is not JSON' };
  }
  if (signed !== digest) return { ok: false, reason: `the signature is for ${String(signed)}, not ${digest} (a signature copied from another image)` };
  return { ok: true, key: signer };
}

/** ECDSA/RSA sign a sha256 of the data; ed25519 signs the data itself. */
export function verifyBytes(data: Buffer, signature: Buffer, key: KeyObject): boolean {
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
  return subjectCovers(covered, digest, key.name);
}

function subjectCovers(covered: { sha256: string[]; other?: string }, digest: string, signer: string): Verdict {
  if (covered.other) return { ok: false, reason: covered.other };
  const { hex } = parseDigest(digest);
  if (!covered.sha256.includes(hex))
    return {
      ok: false,
      reason: `the signature is for ${covered.sha256.map((h) => `sha256:${h}`).join(', ') || 'no image digest'}, not ${digest} (a signature copied from another image)`,
    };
  return { ok: true, key: signer };
}

/**
 * cosign (v3.1) writes a certificate chain into v0.3 bundles, which the
 * bundle format allows only up to v0.2: the leaf is what is verified (the
 * trusted root holds the chain), so it alone is kept.
 */
export function leafOnly(json: unknown): unknown {
  const b = json as { verificationMaterial?: { x509CertificateChain?: { certificates?: unknown[] }; certificate?: unknown } };
  const chain = b?.verificationMaterial?.x509CertificateChain?.certificates;
  if (!Array.isArray(chain) || chain.length === 0) return json;
  const { x509CertificateChain: _chain, ...rest } = b.verificationMaterial!;
  return { ...(json as object), verificationMaterial: { ...rest, certificate: chain[0] } };
}

function checkBundleKeyless(json: unknown, digest: string, policy: KeylessPolicy): Verdict {
  let bundle: Bundle;
  try {
    bundle = bundleFromJSON(leafOnly(json));
  } catch (err) {
    return { ok: false, reason: `not a valid sigstore bundle (${err instanceof Error ? err.message : String(err)})` };
  }
  const material = bundle.verificationMaterial.content.$case;
  if (material === 'publicKey') return { ok: false, reason: 'signed with a key, not a certificate; this policy trusts keyless signers only' };
  if (bundle.content.$case !== 'dsseEnvelope') return { ok: false, reason: bundleSubject(bundle).other ?? 'not a cosign image signature' };
  const verdict = verifyKeyless(toSignedEntity(bundle), policy);
  if (!verdict.ok) return verdict;
  return subjectCovers(bundleSubject(bundle), digest, verdict.key);
}

/** A classic keyless signature: the certificate annotation's key signs the payload; its transparency-log entry (a Rekor SET) is not read here. */
function checkSimpleSigningKeyless(payload: Buffer, signature: Buffer, certificate: string | undefined, digest: string, policy: KeylessPolicy): Verdict {
  if (!certificate) return { ok: false, reason: 'signed with a key, not a certificate; this policy trusts keyless signers only' };
  if (policy.transparencyLog) {
    return {
      ok: false,
      reason:
        'a classic keyless signature (the sha256-….sig tag), whose transparency-log entry KupenStack does not check; ' +
        "sign with cosign v3's default sigstore bundle, or set keyless.transparencyLog: false",
    };
  }
  let der: Buffer;
  try {
    der = new X509Certificate(certificate).raw;
  } catch {
    return { ok: false, reason: 'the certificate annotation is not a PEM certificate' };
  }
  // The same checks as a bundle: the classic parts as a message-signature bundle over the payload.
  let bundle: Bundle;
  try {
    bundle = bundleFromJSON({
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: { certificate: { rawBytes: der.toString('base64') }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } },
      messageSignature: {
        messageDigest: { algorithm: 'SHA2_256', digest: createHash('sha256').update(payload).digest('base64') },
        signature: signature.toString('base64'),
      },
    });
  } catch (err) {
    return { ok: false, reason: `the classic signature cannot be read as a certificate signature (${err instanceof Error ? err.message : String(err)})` };
  }
  const verdict = verifyKeyless(toSignedEntity(bundle, payload), policy);
  if (!verdict.ok) return verdict;
  return payloadCovers(payload, digest, verdict.key);
}

/**
 * The chain, the signature, the logs (per the policy), then the identity.
 * Without the logs there is no time the signature is known to have existed
 * at: the certificate must be valid now (cosign verify --insecure-ignore-tlog
 * does the same). @sigstore/verify checks a chain at the times it is given,
 * so "now" is handed in as the one timestamp.
 */
export function verifyKeyless(entity: SignedEntity, policy: KeylessPolicy): Verdict {
  if (policy.transparencyLog && entity.tlogEntries.length === 0) {
    return {
      ok: false,
      reason:
        'no transparency-log entry (signed with --tlog-upload=false?), and the policy asks for one; set keyless.transparencyLog: false to accept signatures of a private CA without a log',
    };
  }
  const checked: SignedEntity = policy.transparencyLog ? entity : { ...entity, tlogEntries: [], timestamps: [nowStamp()] };
  const thresholds = policy.transparencyLog
    ? { tlogThreshold: 1, ctlogThreshold: 1, timestampThreshold: 1 }
    : { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 1 };
  let identity: { san?: string; issuer?: string };
  try {
    const signer = new Verifier(policy.trust, thresholds).verify(checked);
    identity = { san: signer.identity?.subjectAlternativeName, issuer: signer.identity?.extensions?.issuer };
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    if ((err as { code?: unknown }).code === 'CERTIFICATE_ERROR' && !/SCT/.test(detail))
      return {
        ok: false,
        reason: `the signing certificate is not trusted by ${policy.name}: ${detail} (it must chain to one of its certificate authorities and be valid)`,
      };
    return { ok: false, reason: `the keyless signature does not verify against ${policy.name} (${detail})` };
  }
  return signerVerdict(policy, identity);
}

/**
 * The verified certificate's identity (SAN) and OIDC issuer against the policy: exact, or a regular
 * expression matched whole (`.*@example\.test` is not satisfied by `x@example.test.attacker.example`).
 */
export function signerVerdict(
  policy: Pick<KeylessPolicy, 'identity' | 'issuer'>,
  identity: { san?: string | undefined; issuer?: string | undefined },
): Verdict {
  if (!matches(policy.identity, identity.san))
    return { ok: false, reason: `signed by ${identity.san ?? 'a certificate without an identity'}, not ${expected(policy.identity)}` };
  if (!matches(policy.issuer, identity.issuer))
    return {
      ok: false,
      reason: `the certificate of ${identity.san ?? '?'} was issued for ${identity.issuer ?? 'no OIDC issuer'}, not ${expected(policy.issuer)}`,
    };
  return { ok: true, key: `${identity.san ?? '?'} (${identity.issuer ?? '?'})` };
}

/** A timestamp of "now" in the shape @sigstore/verify reads from a log entry's inclusion promise (its time only; no log is checked with it). */
function nowStamp(): SignedEntity['timestamps'][number] {
  const tlogEntry = {
    inclusionPromise: { signedEntryTimestamp: Buffer.alloc(0) },
    integratedTime: String(Math.floor(Date.now() / 1000)),
    logId: { keyId: Buffer.from('kupenstack-now') },
  };
  return { $case: 'transparency-log', tlogEntry } as unknown as SignedEntity['timestamps'][number];
}

function matches(want: Expected, got: string | undefined): boolean {
  if (got === undefined) return false;
  if ('exact' in want) return got === want.exact;
  return new RegExp(`^(?:${want.regExp})$`).test(got);
}

const expected = (want: Expected): string => ('exact' in want ? want.exact : `a match of /${want.regExp}/`);

function describeSigner(p: KeylessPolicy): string {
  return `${expected(p.identity)} from ${expected(p.issuer)}, ${p.name}`;
}

/** What a bundle's signature covers: the in-toto statement's subjects (DSSE), or the signed message digest. */
function bundleSubject(bundle: Bundle): { sha256: string[]; other?: string } {
  const content = bundle.content;
  if (content.$case === 'dsseEnvelope') {
    try {
      const statement = JSON.parse(content.dsseEnvelope.payload.toString('utf8')) as {
        predicateType?: unknown;
        subject?: Array<{ digest?: Record<string, unknown> }>;
      };
      // An attestation (SBOM, provenance) by the same key is not a signature of the image.
      if (statement.predicateType !== cosignSignPredicate)
        return { sha256: [], other: `an attestation (${String(statement.predicateType)}), not a cosign signature` };
      return { sha256: (statement.subject ?? []).map((s) => s.digest?.sha256).filter((h): h is string => typeof h === 'string') };
    } catch {
      return { sha256: [] };
    }
  }
  // cosign signs images with DSSE statements; a message signature is over some other artifact.
  return { sha256: [], other: 'a message signature, not a cosign image signature (an in-toto statement)' };
}

export function keyTrust(key: KeyObject): TrustMaterial {
  return { certificateAuthorities: [], timestampAuthorities: [], tlogs: [], ctlogs: [], publicKey: () => ({ publicKey: key, validFor: () => true }) };
}
