import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkSignature, signerVerdict } from '../../../oci/cosign-verify.ts';

/**
 * The verdicts on one signature, with keys made here: classic cosign
 * simple-signing payloads (ECDSA P-256, ed25519) and a DSSE sigstore
 * bundle in cosign v3's layout. The registry side (finding them) is covered
 * by test/integration/kinds/image-signatures.test.ts with the real cosign.
 */

const digestA = `sha256:${'a'.repeat(64)}`;
const digestB = `sha256:${'b'.repeat(64)}`;
const ec = (): { publicKey: KeyObject; privateKey: KeyObject } => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const trusted = ec();
const other = ec();
const keys = [{ name: 'file trusted.pub', key: trusted.publicKey }];

function payload(digest: string): Buffer {
  return Buffer.from(JSON.stringify({ critical: { identity: { 'docker-reference': '127.0.0.1:5050/vm/a' }, image: { 'docker-manifest-digest': digest }, type: 'cosign container image signature' }, optional: null }));
}

function classic(digest: string, key: KeyObject) {
  const p = payload(digest);
  const alg = key.asymmetricKeyType === 'ed25519' ? null : 'sha256';
  return { kind: 'simple-signing' as const, where: 'tag x.sig', payload: p, signature: sign(alg, p, key) };
}

const pae = (type: string, body: Buffer): Buffer => Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(type)} ${type} ${body.length} `), body]);

function bundle(digest: string, key: KeyObject, predicateType = 'https://sigstore.dev/cosign/sign/v1') {
  const statement = Buffer.from(JSON.stringify({ _type: 'https://in-toto.io/Statement/v1', subject: [{ digest: { sha256: digest.slice(7) } }], predicateType, predicate: {} }));
  const type = 'application/vnd.in-toto+json';
  const sig = sign('sha256', pae(type, statement), key);
  return {
    kind: 'bundle' as const,
    where: 'referrer sha256:…',
    bundle: {
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: { publicKey: { hint: 'k' }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } },
      dsseEnvelope: { payload: statement.toString('base64'), payloadType: type, signatures: [{ sig: sig.toString('base64'), keyid: '' }] },
    },
  };
}

describe('checkSignature', () => {
  it('accepts a classic signature by the trusted key over the digest being imported (ECDSA and ed25519)', () => {
    expect(checkSignature(classic(digestA, trusted.privateKey), digestA, keys)).toEqual({ ok: true, key: 'file trusted.pub' });
    const ed = generateKeyPairSync('ed25519');
    expect(checkSignature(classic(digestA, ed.privateKey), digestA, [{ name: 'ed', key: ed.publicKey }])).toEqual({ ok: true, key: 'ed' });
  });

  it('refuses a classic signature by another key, or over another digest, or a tampered payload', () => {
    expect(checkSignature(classic(digestA, other.privateKey), digestA, keys)).toEqual({ ok: false, reason: 'signed by another key' });
    expect(checkSignature(classic(digestB, trusted.privateKey), digestA, keys)).toEqual({ ok: false, reason: `the signature is for ${digestB}, not ${digestA} (a signature copied from another image)` });
    const s = classic(digestB, trusted.privateKey);
    expect(checkSignature({ ...s, payload: payload(digestA) }, digestA, keys)).toEqual({ ok: false, reason: 'signed by another key' });
  });

  it('accepts a cosign v3 bundle by the trusted key for the digest, and refuses another key, another digest, or an attestation', () => {
    expect(checkSignature(bundle(digestA, trusted.privateKey), digestA, keys)).toEqual({ ok: true, key: 'file trusted.pub' });
    expect(checkSignature(bundle(digestA, other.privateKey), digestA, keys)).toEqual({ ok: false, reason: 'signed by another key' });
    expect(checkSignature(bundle(digestB, trusted.privateKey), digestA, keys)).toEqual({ ok: false, reason: `the signature is for ${digestB}, not ${digestA} (a signature copied from another image)` });
    expect(checkSignature(bundle(digestA, trusted.privateKey, 'https://spdx.dev/Document'), digestA, keys)).toEqual({ ok: false, reason: 'an attestation (https://spdx.dev/Document), not a cosign signature' });
  });
});

/*
 * The keyless identity check, after the chain and signature verified (test/integration/kinds/image-signatures-keyless.test.ts
 * runs the whole path with the real cosign and a local CA): the SAN and the OIDC issuer, exact or a regular expression that
 * must match whole, or an attacker's identity that merely contains the expected one passes.
 */
describe('signerVerdict', () => {
  const policy = { identity: { regExp: '.*@example\\.test' }, issuer: { exact: 'https://issuer.example.test' } };

  it('accepts the identity and issuer the policy names, and names the signer', () => {
    expect(signerVerdict(policy, { san: 'ci@example.test', issuer: 'https://issuer.example.test' })).toEqual({ ok: true, key: 'ci@example.test (https://issuer.example.test)' });
    expect(signerVerdict({ identity: { exact: 'ci@example.test' }, issuer: { regExp: 'https://issuer\\.example\\.(test|org)' } }, { san: 'ci@example.test', issuer: 'https://issuer.example.org' })).toMatchObject({ ok: true });
  });

  it('refuses another identity, or one without a SAN', () => {
    expect(signerVerdict({ ...policy, identity: { exact: 'ci@example.test' } }, { san: 'mallory@example.test', issuer: 'https://issuer.example.test' })).toEqual({ ok: false, reason: 'signed by mallory@example.test, not ci@example.test' });
    expect(signerVerdict(policy, { issuer: 'https://issuer.example.test' })).toEqual({ ok: false, reason: 'signed by a certificate without an identity, not a match of /.*@example\\.test/' });
  });

  it('matches a regular expression whole: a SAN or issuer that only contains a match is refused', () => {
    expect(signerVerdict(policy, { san: 'x@example.test.attacker.example', issuer: 'https://issuer.example.test' })).toEqual({ ok: false, reason: 'signed by x@example.test.attacker.example, not a match of /.*@example\\.test/' });
    const issuerRe = { identity: { exact: 'ci@example.test' }, issuer: { regExp: 'https://issuer\\.example\\.test' } };
    expect(signerVerdict(issuerRe, { san: 'ci@example.test', issuer: 'https://issuer.example.test.attacker.example' })).toMatchObject({ ok: false });
    expect(signerVerdict(issuerRe, { san: 'ci@example.test', issuer: 'evil-https://issuer.example.test' })).toMatchObject({ ok: false });
  });

  it('refuses another issuer, or none', () => {
    expect(signerVerdict(policy, { san: 'ci@example.test', issuer: 'https://accounts.attacker.example' })).toEqual({ ok: false, reason: 'the certificate of ci@example.test was issued for https://accounts.attacker.example, not https://issuer.example.test' });
    expect(signerVerdict(policy, { san: 'ci@example.test' })).toEqual({ ok: false, reason: 'the certificate of ci@example.test was issued for no OIDC issuer, not https://issuer.example.test' });
  });
});
