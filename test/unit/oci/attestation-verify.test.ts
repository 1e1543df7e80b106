import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { builderIdOf, findingsOf, provenanceRefusal, vulnRefusal } from '../../../oci/attestation-conditions.ts';
import { acceptedTypes, vulnPredicate, type AttestationRequirement } from '../../../oci/attestation-policy.ts';
import { candidateOf, judge, type Candidate } from '../../../oci/attestation-verify.ts';
import { pae, parseEnvelope, parseStatement, subjectMismatch } from '../../../oci/dsse.ts';

/**
 * Attestations with keys made here: DSSE envelopes as the classic
 * `sha256-<hex>.att` tag holds them and sigstore bundles as cosign v3 puts
 * them among the referrers; the in-toto statements in them; the predicate
 * conditions. The registry side with the real cosign is
 * test/integration/kinds/image-attestations.test.ts.
 */

const digestA = `sha256:${'a'.repeat(64)}`;
const digestB = `sha256:${'b'.repeat(64)}`;
const ec = (): { publicKey: KeyObject; privateKey: KeyObject } => generateKeyPairSync('ec', { namedCurve: 'P-256' });
const trusted = ec();
const other = ec();
const signer = { keys: [{ name: 'file trusted.pub', key: trusted.publicKey }] };
const inToto = 'application/vnd.in-toto+json';
const slsa1 = 'https://slsa.dev/provenance/v1';
const slsa02 = 'https://slsa.dev/provenance/v0.2';
const now = Date.parse('2026-12-06T12:00:00Z');

function statement(digest: string, predicateType: string, predicate: unknown): Buffer {
  return Buffer.from(JSON.stringify({ _type: 'https://in-toto.io/Statement/v0.1', subject: [{ name: 'r', digest: { sha256: digest.slice(7) } }], predicateType, predicate }));
}

/** The classic layer: a DSSE envelope signed over the PAE. */
function envelope(digest: string, predicateType: string, predicate: unknown, key: KeyObject) {
  const body = statement(digest, predicateType, predicate);
  const sig = sign('sha256', pae(inToto, body), key);
  return { kind: 'envelope' as const, where: 'tag sha256-a.att', envelope: { payloadType: inToto, payload: body.toString('base64'), signatures: [{ keyid: '', sig: sig.toString('base64') }] } };
}

/** cosign v3: a sigstore bundle whose content is the DSSE envelope. */
function bundle(digest: string, predicateType: string, predicate: unknown, key: KeyObject) {
  const e = envelope(digest, predicateType, predicate, key).envelope;
  return {
    kind: 'bundle' as const,
    where: 'referrer sha256:c',
    bundle: {
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: { publicKey: { hint: 'k' }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } },
      dsseEnvelope: e,
    },
  };
}

const provenance = (builder: string): unknown => ({ buildDefinition: { buildType: 'x' }, runDetails: { builder: { id: builder } } });
const scan = (finished: string, vulns: Array<[string, string]>): unknown => ({
  scanner: { uri: 'pkg:github/aquasecurity/trivy', result: { Results: [{ Target: 'disk', Vulnerabilities: vulns.map(([id, s]) => ({ VulnerabilityID: id, Severity: s })) }] } },
  metadata: { scanStartedOn: finished, scanFinishedOn: finished },
});

const requirement = (predicateType: string, conditions: AttestationRequirement['conditions'] = {}): AttestationRequirement => ({
  predicateType,
  accepted: acceptedTypes(predicateType)!,
  signer,
  conditions,
});
const looked = ['the referrers of x', 'the tag sha256-a.att'];

describe('DSSE and in-toto statements', () => {
  it('computes the pre-authentication encoding DSSE signs', () => {
    expect(pae('application/example', Buffer.from('hello world')).toString()).toBe('DSSEv1 19 application/example 11 hello world');
  });

  it('parses an envelope and its statement, and refuses what is not one', () => {
    const e = parseEnvelope(envelope(digestA, slsa1, provenance('b'), trusted.privateKey).envelope);
    const s = parseStatement(e.payloadType, e.payload);
    expect(s).toEqual({ predicateType: slsa1, subjects: ['a'.repeat(64)], predicate: provenance('b') });
    expect(() => parseEnvelope({ payloadType: inToto, payload: '', signatures: [] })).toThrow(/without a signature/);
    expect(() => parseEnvelope({ payload: 'x' })).toThrow(/not a DSSE envelope/);
    expect(() => parseStatement('text/plain', Buffer.from('{}'))).toThrow(/not an in-toto statement/);
    expect(() => parseStatement(inToto, Buffer.from('{"_type":"other","predicateType":"x"}'))).toThrow(/not an in-toto statement/);
    expect(() => parseStatement(inToto, Buffer.from('nope'))).toThrow(/not JSON/);
  });

  it("names a statement about another image's digest as copied", () => {
    const s = parseStatement(inToto, statement(digestB, slsa1, {}));
    expect(subjectMismatch(s, digestB)).toBeUndefined();
    expect(subjectMismatch(s, digestA)).toBe(`the attestation is for ${digestB}, not ${digestA} (an attestation copied from another image)`);
  });
});

describe('predicate types', () => {
  it("takes cosign's --type names and URIs, nothing else", () => {
    expect(acceptedTypes('slsaprovenance')).toEqual([slsa02, slsa1]);
    expect(acceptedTypes('vuln')).toEqual([vulnPredicate]);
    expect(acceptedTypes('cyclonedx')).toEqual(['https://cyclonedx.org/bom']);
    expect(acceptedTypes('https://example.test/custom/v1')).toEqual(['https://example.test/custom/v1']);
    expect(acceptedTypes('provenance')).toBeUndefined();
  });
});

describe('conditions', () => {
  it("reads the builder id of SLSA v1 and v0.2 and compares it exactly or by a whole-match regexp", () => {
    expect(builderIdOf(provenance('https://ci.example.test/b'))).toBe('https://ci.example.test/b');
    expect(builderIdOf({ builder: { id: 'v02' } })).toBe('v02');
    expect(provenanceRefusal(provenance('X'), { builderId: { exact: 'X' } })).toBeUndefined();
    expect(provenanceRefusal(provenance('Y'), { builderId: { exact: 'X' } })).toBe('builder mismatch: built by Y, not X');
    expect(provenanceRefusal(provenance('https://ci.example.test/b'), { builderId: { regExp: 'https://ci\\.example\\.test/.*' } })).toBeUndefined();
    expect(provenanceRefusal(provenance('https://ci.example.test.evil/b'), { builderId: { regExp: 'https://ci\\.example\\.test/.*' } })).toMatch(/^builder mismatch: built by https:\/\/ci\.example\.test\.evil\/b/);
    expect(provenanceRefusal({}, { builderId: { exact: 'X' } })).toBe('builder mismatch: the provenance names no builder id, not X');
  });

  it('finds Trivy and Grype findings, and refuses a finding at or above maxSeverity', () => {
    const grype = { scanner: { result: { matches: [{ vulnerability: { id: 'CVE-2', severity: 'High' } }, { vulnerability: { id: 'CVE-3', severity: 'Negligible' } }] } } };
    expect(findingsOf(grype)).toEqual([{ id: 'CVE-2', severity: 'HIGH' }]);
    const p = scan('2026-12-05T00:00:00Z', [['CVE-1', 'HIGH'], ['CVE-9', 'CRITICAL'], ['CVE-8', 'CRITICAL']]);
    expect(vulnRefusal(p, { maxSeverity: 'CRITICAL' }, now)).toBe('CRITICAL finding CVE-9 and 1 more at or above CRITICAL');
    expect(vulnRefusal(scan('2026-12-05T00:00:00Z', [['CVE-1', 'HIGH']]), { maxSeverity: 'CRITICAL' }, now)).toBeUndefined();
    expect(vulnRefusal(scan('2026-12-05T00:00:00Z', [['CVE-1', 'MEDIUM']]), { maxSeverity: 'MEDIUM' }, now)).toBe('MEDIUM finding CVE-1');
  });

  it('refuses a scan older than maxAgeDays, or one without a finish time', () => {
    expect(vulnRefusal(scan('2026-10-27T12:00:00Z', []), { maxAgeDays: 30 }, now)).toBe('scan 40 days old (finished 2026-10-27T12:00:00.000Z; at most 30 allowed)');
    expect(vulnRefusal(scan('2026-11-27T12:00:00Z', []), { maxAgeDays: 30 }, now)).toBeUndefined();
    expect(vulnRefusal({ scanner: {} }, { maxAgeDays: 30 }, now)).toMatch(/no finish time/);
  });
});

const candidates = (...found: Array<ReturnType<typeof envelope> | ReturnType<typeof bundle>>): Candidate[] => found.map((f) => candidateOf(f, digestA)!);

describe('judge', () => {
  const slsa = requirement('slsaprovenance', { builderId: { exact: 'X' } });

  it.each([
    ['a classic envelope', envelope],
    ['a bundle', bundle],
  ])('meets a requirement with %s signed by the trusted key, for the digest, meeting the conditions', (_what, make) => {
    const verdict = judge(slsa, candidates(make(digestA, slsa1, provenance('X'), trusted.privateKey)), looked, now);
    expect(verdict).toMatchObject({ predicateType: slsa1, signer: 'file trusted.pub' });
  });

  it('refuses: absent, wrong signer, copied from another image, builder mismatch', () => {
    expect(judge(slsa, candidates(envelope(digestA, vulnPredicate, scan('2026-12-05T00:00:00Z', []), trusted.privateKey)), looked, now)).toEqual({
      refused: `absent: no attestation of this type in ${looked.join(', ')}`,
    });
    expect(judge(slsa, candidates(bundle(digestA, slsa1, provenance('X'), other.privateKey)), looked, now)).toEqual({
      refused: 'referrer sha256:c: wrong signer: signed by another key, not file trusted.pub',
    });
    expect(judge(slsa, candidates(envelope(digestA, slsa1, provenance('X'), other.privateKey)), looked, now)).toEqual({
      refused: 'tag sha256-a.att: wrong signer: signed by another key, not file trusted.pub',
    });
    expect(judge(slsa, candidates(envelope(digestB, slsa1, provenance('X'), trusted.privateKey)), looked, now)).toEqual({
      refused: `tag sha256-a.att: the attestation is for ${digestB}, not ${digestA} (an attestation copied from another image)`,
    });
    expect(judge(slsa, candidates(envelope(digestA, slsa1, provenance('Y'), trusted.privateKey)), looked, now)).toEqual({
      refused: 'tag sha256-a.att: builder mismatch: built by Y, not X',
    });
  });

  it('refuses a tampered envelope: the signature no longer verifies', () => {
    const e = envelope(digestA, slsa1, provenance('Y'), trusted.privateKey);
    const forged = { ...e, envelope: { ...e.envelope, payload: statement(digestA, slsa1, provenance('X')).toString('base64') } };
    expect(judge(slsa, candidates(forged), looked, now)).toEqual({ refused: 'tag sha256-a.att: wrong signer: signed by another key, not file trusted.pub' });
  });

  it('meets the requirement when one of several provenances does, and judges the newest vulnerability scan only', () => {
    const two = candidates(envelope(digestA, slsa1, provenance('Y'), other.privateKey), bundle(digestA, slsa1, provenance('X'), trusted.privateKey));
    expect(judge(slsa, two, looked, now)).toMatchObject({ where: 'referrer sha256:c' });
    const vuln = requirement('vuln', { maxSeverity: 'CRITICAL' });
    const oldClean = envelope(digestA, vulnPredicate, scan('2026-12-01T00:00:00Z', []), trusted.privateKey);
    const newBad = bundle(digestA, vulnPredicate, scan('2026-12-05T00:00:00Z', [['CVE-2026-1', 'CRITICAL']]), trusted.privateKey);
    expect(judge(vuln, candidates(oldClean, newBad), looked, now)).toEqual({ refused: 'referrer sha256:c: CRITICAL finding CVE-2026-1' });
    expect(judge(vuln, candidates(oldClean), looked, now)).toMatchObject({ predicateType: vulnPredicate });
  });

  it('skips what is not an in-toto statement (nothing to require of it)', () => {
    expect(candidateOf({ kind: 'envelope', where: 'x', envelope: { nope: 1 } }, digestA)).toBeUndefined();
    expect(candidateOf({ kind: 'bundle', where: 'x', bundle: { mediaType: 'nope' } }, digestA)).toBeUndefined();
  });
});
