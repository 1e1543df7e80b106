import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { refusalOf } from '../../agent/act/refusals.ts';
import { KupenstackError } from '../../agent/errors.ts';
import { attestationRequirements } from '../../agent/kinds/image/attest.ts';
import type { ImageVerify } from '../../agent/model/kinds.generated.ts';
import type { SecretKey } from '../../agent/secrets/resolver.ts';
import { loadConfig } from '../../agent/sync/config-file.ts';
import { ociSignaturePolicy } from '../../agent/source/oci-secrets.ts';

/**
 * `spec.verify.attestations` as the Image kind reads it: predicate type
 * names, each attestation's signer (its own, else the image signature's),
 * conditions only where the predicate has what they read; and a refusal is
 * Stalled (AttestationVerificationFailed).
 */

const pem = (): string => generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
const files: Record<string, string> = { 'image.pub': pem(), 'builder.pub': pem(), 'not.pub': 'not a key' };
const reader = {
  where: 'images.yaml:7 (spec.verify)',
  read: (ref: SecretKey): Promise<string> => {
    const file = 'file' in ref ? ref.file : undefined;
    if (file === undefined || files[file] === undefined) return Promise.reject(new Error(`no ${JSON.stringify(ref)}`));
    return Promise.resolve(files[file]);
  },
};
const base: ImageVerify = { publicKey: { file: 'image.pub' } };

describe('attestationRequirements', () => {
  it("resolves aliases and signers: the attestation's own key, else the image signature's", async () => {
    const rs = await attestationRequirements(
      reader,
      {
        ...base,
        attestations: [
          { predicateType: 'slsaprovenance', publicKey: { file: 'builder.pub' }, conditions: { builderIdRegExp: 'https://ci\\.example\\.test/.*' } },
          { predicateType: 'vuln', conditions: { maxSeverity: 'CRITICAL', maxAgeDays: 7 } },
          { predicateType: 'https://spdx.dev/Document' },
        ],
      },
      'ns',
    );
    expect(rs.map((r) => [r.predicateType, r.accepted, r.signer.keys.map((k) => k.name), r.conditions])).toEqual([
      ['slsaprovenance', ['https://slsa.dev/provenance/v0.2', 'https://slsa.dev/provenance/v1'], ['file builder.pub'], { builderId: { regExp: 'https://ci\\.example\\.test/.*' } }],
      ['vuln', ['https://cosign.sigstore.dev/attestation/vuln/v1'], ['file image.pub'], { maxSeverity: 'CRITICAL', maxAgeDays: 7 }],
      ['https://spdx.dev/Document', ['https://spdx.dev/Document'], ['file image.pub'], {}],
    ]);
  });

  it.each([
    ['an unknown type name', { predicateType: 'provenance' }, /attestations\[0\]: predicateType provenance is neither a URI nor one of slsaprovenance, /],
    ['a builder id on a scan', { predicateType: 'vuln', conditions: { builderId: 'X' } }, /conditions.builderId applies to SLSA provenance only, not vuln/],
    ['a severity on provenance', { predicateType: 'slsaprovenance', conditions: { maxSeverity: 'HIGH' as const } }, /maxSeverity and maxAgeDays apply to vulnerability scans \(vuln\) only/],
    ['both builder forms', { predicateType: 'slsaprovenance1', conditions: { builderId: 'X', builderIdRegExp: 'X' } }, /at most one of conditions.builderId or conditions.builderIdRegExp/],
    ['a broken regexp', { predicateType: 'slsaprovenance1', conditions: { builderIdRegExp: '(' } }, /builderIdRegExp is not a valid regular expression/],
    ['two signers', { predicateType: 'vuln', publicKey: { file: 'image.pub' }, keyless: { trustedRoot: { file: 'r' }, identity: 'a', issuer: 'b' } }, /at most one of publicKey or keyless/],
    ['a key that is not one', { predicateType: 'vuln', publicKey: { file: 'not.pub' } }, /attestations\[0\]: file not.pub does not hold a PEM public key/],
  ])('refuses %s as image.attestation, naming where', async (_what, attestation, message) => {
    const err = await attestationRequirements(reader, { ...base, attestations: [attestation] }, 'ns').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KupenstackError);
    expect((err as KupenstackError).message).toMatch(message);
    // A malformed policy is the policy's fault: Stalled for a person to fix it, like a refused version.
    expect((err as KupenstackError).code).toBe('image.attestation');
  });
});

describe('refusalOf', () => {
  it('makes a refused attestation Stalled with its own reason', () => {
    const err = new KupenstackError('image.attestation', 'x: refused, attestation vuln: CRITICAL finding CVE-1');
    expect(refusalOf(err)).toEqual({ reason: 'AttestationVerificationFailed', error: err });
  });
});

describe("a Sync's imageVerify: the cluster-wide default", () => {
  const scratch = mkdtempSync(join(tmpdir(), 'ks-attest-config-'));
  const write = (text: string): string => {
    const f = join(scratch, `k${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(f, text);
    return f;
  };

  it('carries the attestations its Images must have', async () => {
    const c = loadConfig(
      write(`syncs:
  - name: attested
    source: {directory: {path: /srv/a}}
    imageVerify:
      publicKey: {file: image.pub}
      attestations:
        - predicateType: slsaprovenance1
          conditions: {builderId: X}
`),
    );
    const policy = c.syncs![0]!.imageVerify!;
    expect(policy.attestations).toEqual([{ predicateType: 'slsaprovenance1', conditions: { builderId: 'X' } }]);
    const [r] = await attestationRequirements(reader, policy, 'ns');
    expect(r).toMatchObject({ accepted: ['https://slsa.dev/provenance/v1'], conditions: { builderId: { exact: 'X' } } });
    expect(r!.signer.keys.map((k) => k.name)).toEqual(['file image.pub']);
  });

  it('refuses a condition the schema does not know, naming it', () => {
    expect(() =>
      loadConfig(
        write(`syncs:
  - name: attested
    source: {directory: {path: /srv/a}}
    imageVerify:
      publicKey: {file: image.pub}
      attestations:
        - predicateType: vuln
          conditions: {maxSeverty: HIGH}
`),
      ),
    ).toThrow(/maxSeverty/);
  });
});

describe("a Sync's own source.oci.verify", () => {
  it('refuses attestations: its artifact is not an image, and a list nothing checks must not seem to gate it', async () => {
    const load = ociSignaturePolicy(
      { url: 'oci://127.0.0.1:5050/m', ref: { tag: 'v1' }, verify: { publicKey: { file: 'image.pub' }, attestations: [{ predicateType: 'vuln' }] } },
      undefined,
    )!;
    await expect(load()).rejects.toMatchObject({ code: 'source.signature', message: expect.stringMatching(/^source\.oci\.verify\.attestations: attestations are checked for Images only/) as unknown });
  });
});
