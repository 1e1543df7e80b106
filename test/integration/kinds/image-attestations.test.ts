import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath, planPath } from '../../../agent/standalone/apply-path.ts';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { FileStateStore } from '../../../agent/status/file-store.ts';
import type { StoredState } from '../../../agent/status/store.ts';
import type { ApplyReport, PlannedRevision } from '../../../agent/act/apply.ts';
import { pushDisk } from '../../../oci/push.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { testCloudName, testProject } from '../../support/context.ts';
import { qcow2Disk } from './image-oci-fixtures.ts';
import { signing } from '../../testbed/signing/peer.ts';

/**
 * `spec.verify.attestations` with the real cosign (v3): every image is
 * signed by the trusted key; the policy also requires signed SLSA
 * provenance from builder X and a vulnerability scan with no CRITICAL
 * finding, at most 30 days old. Attestations are made with `cosign attest
 * --type slsaprovenance|slsaprovenance1|vuln` from predicate files written
 * here: sigstore bundles through the referrers API (127.0.0.1:5060) and
 * classic `sha256-<hex>.att` tags (distribution 2.8, 127.0.0.1:5050). An
 * image with both imports; one missing its provenance, one with a CRITICAL
 * finding, one whose scan is 40 days old and one whose provenance is signed
 * by another key are refused in the plan, and in the apply are Stalled
 * (AttestationVerificationFailed) naming the attestation and why, with no
 * Glance image of their digest. Keyless: a provenance attested with the
 * certificate of a local CA (openssl; `cosign attest --certificate`) meets
 * a requirement whose signer is that CA's identity (a regexp) and issuer,
 * and is refused where the policy names another identity.
 */

const exec = promisify(execFile);
const referrersRegistry = signing.referrersRegistry;
const distribution = '127.0.0.1:5050';
const run = randomBytes(3).toString('hex');
const ns = 'attest';
const password = `attestations-${run}`;
const dir = mkdtempSync(join(tmpdir(), 'ks-attestations-'));
const builder = 'https://ci.example.test/vm-images/builder@v1';
const dayMs = 24 * 60 * 60 * 1000;
const ciIdentity = 'vm-builder@ci.example.test';
const ciIssuer = 'https://issuer.example.test';
let ws: Workspace;

async function cosign(...args: string[]): Promise<string> {
  const { stdout, stderr } = await exec(signing.cosign, args, { cwd: dir, env: { ...process.env, COSIGN_PASSWORD: password, COSIGN_YES: 'true' } });
  return `${stdout}${stderr}`;
}

const registryFlags = ['--tlog-upload=false', '--use-signing-config=false', '--allow-http-registry', '--allow-insecure-registry'];

/** classic: the v2 layout (`.sig` / `.att` tags), else sigstore bundles through the referrers API. */
const layout = (classic: boolean): string[] => (classic ? ['--new-bundle-format=false'] : []);

/** `key` a cosign key file, or `ci` for the CA's leaf certificate (keyless, offline). */
async function attest(key: string, type: string, predicate: unknown, ref: string, classic: boolean): Promise<void> {
  const file = join(dir, `predicate-${randomBytes(3).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify(predicate));
  const signer = key === 'ci' ? ['--key', 'ci-leaf.key', '--certificate', 'ci-leaf.crt', '--certificate-chain', 'ci-ca.pem'] : ['--key', key];
  await cosign('attest', ...signer, '--type', type, '--predicate', file, ...registryFlags, ...layout(classic), ref);
}

const openssl = async (...args: string[]): Promise<void> => {
  await exec('openssl', args, { cwd: dir });
};

/** A CA and a leaf it signs for the CI's identity and issuer (Fulcio's shape), imported as the cosign key pair `ci-leaf.key`; the CA as trusted_root.json. */
async function authority(): Promise<void> {
  writeFileSync(
    join(dir, 'ci.cnf'),
    ['[req]', 'distinguished_name = dn', 'prompt = no', '[dn]', `CN = attestations test CA ${run}`, '[ca]', 'basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign, cRLSign', 'subjectKeyIdentifier = hash', '[leaf]', 'basicConstraints = critical, CA:FALSE', 'keyUsage = critical, digitalSignature', 'extendedKeyUsage = codeSigning', `subjectAltName = email:${ciIdentity}`, 'authorityKeyIdentifier = keyid', `1.3.6.1.4.1.57264.1.8 = ASN1:UTF8String:${ciIssuer}`, ''].join('\n'),
  );
  await openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ci-ca.key');
  await openssl('req', '-new', '-x509', '-key', 'ci-ca.key', '-out', 'ci-ca.pem', '-days', '30', '-config', 'ci.cnf', '-extensions', 'ca');
  await openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ci-leaf.ec');
  await openssl('pkcs8', '-topk8', '-nocrypt', '-in', 'ci-leaf.ec', '-out', 'ci-leaf.pem.key');
  await openssl('req', '-new', '-key', 'ci-leaf.pem.key', '-subj', '/O=ci', '-out', 'ci-leaf.csr');
  await openssl('x509', '-req', '-in', 'ci-leaf.csr', '-CA', 'ci-ca.pem', '-CAkey', 'ci-ca.key', '-CAcreateserial', '-days', '7', '-extfile', 'ci.cnf', '-extensions', 'leaf', '-out', 'ci-leaf.crt');
  await cosign('import-key-pair', '--key', 'ci-leaf.pem.key', '--output-key-prefix', 'ci-leaf');
  await cosign('trusted-root', 'create', '--fulcio', `url=https://fulcio.example.test,certificate-chain=${join(dir, 'ci-ca.pem')}`, '--no-default-ctfe', '--no-default-fulcio', '--no-default-rekor', '--no-default-tsa', '--out', join(dir, 'trusted_root.json'));
}

/** SLSA v0.2 (what --type slsaprovenance takes) and v1 (slsaprovenance1): the builder id in each one's place. */
const provenance02 = (id: string): unknown => ({ builder: { id }, buildType: 'https://example.test/vm-image@v1', invocation: { configSource: {} }, materials: [] });
const provenance1 = (id: string): unknown => ({ buildDefinition: { buildType: 'https://example.test/vm-image@v1', externalParameters: {} }, runDetails: { builder: { id } } });

/** cosign's vuln predicate with a Trivy report: findings [id, severity], finished `daysAgo` days ago. */
function scan(daysAgo: number, findings: Array<[string, string]>): unknown {
  const finished = new Date(Date.now() - daysAgo * dayMs).toISOString();
  return {
    invocation: { parameters: null, uri: '', event_id: '', 'builder.id': '' },
    scanner: {
      uri: 'pkg:github/aquasecurity/trivy@0.58.0',
      version: '0.58.0',
      db: { uri: '', version: '' },
      result: { Results: [{ Target: 'disk', Vulnerabilities: findings.map(([VulnerabilityID, Severity]) => ({ VulnerabilityID, Severity })) }] },
    },
    metadata: { scanStartedOn: finished, scanFinishedOn: finished },
  };
}

interface Case {
  name: string;
  repository: string;
  digest: string;
  classic: boolean;
}
const cases: Record<string, Case> = {};

async function pushCase(name: string, registry: string, repo: string): Promise<Case> {
  const file = join(dir, `${name}.qcow2`);
  writeFileSync(file, qcow2Disk());
  const c = { name, repository: `${registry}/${repo}`, digest: (await pushDisk(file, `${registry}/${repo}:${name}`, { insecure: true })).manifestDigest, classic: registry === distribution };
  cases[name] = c;
  return c;
}

/** What each case carries: the image signature always, then its attestations. */
async function attestCase(c: Case): Promise<void> {
  const ref = `${c.repository}@${c.digest}`;
  const trusted = join(dir, 'trusted.key');
  await cosign('sign', '--key', trusted, ...registryFlags, ...layout(c.classic), ref);
  const kind = c.name.split('-')[0] ?? '';
  const slsa = c.classic ? (['slsaprovenance', provenance02(builder)] as const) : (['slsaprovenance1', provenance1(builder)] as const);
  const provenanceKey = kind === 'wrongkey' ? join(dir, 'other.key') : kind.startsWith('keyless') ? 'ci' : trusted;
  if (kind !== 'noprov') await attest(provenanceKey, slsa[0], slsa[1], ref, c.classic);
  const findings: Array<[string, string]> = kind === 'critical' ? [['CVE-2026-40001', 'CRITICAL'], ['CVE-2026-40002', 'HIGH']] : [['CVE-2026-40003', 'HIGH']];
  await attest(trusted, 'vuln', scan(kind === 'stale' ? 40 : 1, findings), ref, c.classic);
}

/** The provenance's signer: the image's key, or (keyless cases) the CI's identity by a regexp, which keylessother's policy names wrongly. */
function provenanceSigner(c: Case): string {
  if (!c.name.startsWith('keyless')) return '';
  const identity = c.name.startsWith('keylessother') ? '.*@release\\.example\\.test' : '.*@ci\\.example\\.test';
  return `        keyless: {trustedRoot: {file: "${join(dir, 'trusted_root.json')}"}, identityRegExp: '${identity}', issuer: "${ciIssuer}", transparencyLog: false}\n`;
}

const imageYaml = (c: Case): string =>
  `${head('Image', c.name, ns)}  source:\n    oci: {repository: "${c.repository}", tag: ${c.name}, insecure: true, sharing: private}\n` +
  `  verify:\n    publicKey: {file: "${join(dir, 'trusted.pub')}"}\n    attestations:\n` +
  `      - predicateType: slsaprovenance\n${provenanceSigner(c)}        conditions: {builderId: "${builder}"}\n` +
  `      - predicateType: vuln\n        conditions: {maxSeverity: CRITICAL, maxAgeDays: 30}\n`;

beforeAll(async () => {
  ws = new Workspace();
  await Promise.all([cosign('generate-key-pair', '--output-key-prefix', 'trusted'), cosign('generate-key-pair', '--output-key-prefix', 'other'), authority()]);
  const zotRepo = `attestations/${run}`;
  const distRepo = `it/attestations-${run}`;
  const pushed = await Promise.all([
    pushCase('good-ref', referrersRegistry, zotRepo),
    pushCase('wrongkey-ref', referrersRegistry, zotRepo),
    pushCase('keyless-ref', referrersRegistry, zotRepo),
    pushCase('keylessother-ref', referrersRegistry, zotRepo),
    pushCase('good-tag', distribution, distRepo),
    pushCase('noprov-tag', distribution, distRepo),
    pushCase('critical-tag', distribution, distRepo),
    pushCase('stale-tag', distribution, distRepo),
  ]);
  // One cosign at a time per registry: the machine's cores are shared.
  await Promise.all([pushed.filter((c) => !c.classic), pushed.filter((c) => c.classic)].map(async (list) => {
    for (const c of list) await attestCase(c);
  }));
  ws.write({ 'images.yaml': Object.values(cases).map(imageYaml).join('---\n') });
}, 300_000);

afterAll(async () => {
  await ws?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const secrets = (): EnvFileSecretResolver => new EnvFileSecretResolver({ secretsDir: join(dir, 'secrets') });
const provenanceType = 'attestation slsaprovenance (https://slsa.dev/provenance/v0.2 or https://slsa.dev/provenance/v1)';
const vulnType = 'attestation vuln (https://cosign.sigstore.dev/attestation/vuln/v1)';

const refusals: Array<[string, RegExp]> = [
  ['noprov-tag', new RegExp(`${literal(provenanceType)}: absent: no attestation of this type in the referrers of sha256:[a-f0-9]{64}, the tag sha256-[a-f0-9]{64}\\.att`)],
  ['wrongkey-ref', new RegExp(`${literal(provenanceType)}: referrer sha256:[a-f0-9]{64}: wrong signer: signed by another key, not file .*trusted\\.pub`)],
  ['critical-tag', new RegExp(`${literal(vulnType)}: tag sha256-[a-f0-9]{64}\\.att: CRITICAL finding CVE-2026-40001`)],
  ['stale-tag', new RegExp(`${literal(vulnType)}: tag sha256-[a-f0-9]{64}\\.att: scan 40 days old \\(finished \\S+; at most 30 allowed\\)`)],
  ['keylessother-ref', new RegExp(`${literal(provenanceType)}: referrer sha256:[a-f0-9]{64}: wrong signer: signed by ${literal(ciIdentity)}, not a match of /\\.\\*@release`)],
];
/** The images that carry what the policy asks: created, one Glance image each. */
const attested = ['good-ref', 'good-tag', 'keyless-ref'];

function literal(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Glance images (admin, every project, hidden ones too) whose oci_manifest_digest is the digest. */
async function glanceByDigest(digest: string): Promise<number> {
  const image = ws.cloud.client('image');
  const q = { visibility: 'all', oci_manifest_digest: digest };
  return (await image.list('/images', 'images', q)).length + (await image.list('/images', 'images', { ...q, os_hidden: true })).length;
}

describe('Image spec.verify.attestations with the real cosign', () => {
  let planned: PlannedRevision;
  let applied: ApplyReport;
  let state: StoredState;

  it('plans the attested images as creates and refuses the others', async () => {
    const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined, secrets: secrets() });
    expect(outcome.diagnostics).toEqual([]);
    planned = outcome.report!;
    expect(planned.changes.map((c) => `${c.address} ${c.action}`).sort()).toEqual(attested.map((n) => `${ns}/Image/${n} create`).sort());
    expect(planned.errors.map((e) => e.address).sort()).toEqual(refusals.map(([n]) => `${ns}/Image/${n}`).sort());
  });

  it.each(refusals)('the plan refuses %s as image.attestation, naming the reference, the attestation and why', (name, pattern) => {
    const c = cases[name]!;
    const e = planned.errors.find((x) => x.address === `${ns}/Image/${name}`)!;
    expect(e.code).toBe('image.attestation');
    expect(e.message).toContain('images.yaml:');
    expect(e.message).toContain(`${c.repository}:${name}@${c.digest}: refused, `);
    expect(e.message).toMatch(pattern);
  });

  it('the apply imports only the attested images (key and keyless), one Glance image each', async () => {
    const outcome = await applyPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined, secrets: secrets() });
    applied = outcome.report!;
    expect(applied.created).toBe(3);
    expect(applied.errors.map((e) => `${e.address} ${e.code}`).sort()).toEqual(refusals.map(([n]) => `${ns}/Image/${n} image.attestation`).sort());
    expect(await Promise.all(attested.map((n) => glanceByDigest(cases[n]!.digest)))).toEqual([1, 1, 1]);
    state = await new FileStateStore(ws.config.stateDir, ws.owner).load();
  });

  it.each(refusals)('the apply leaves %s Stalled (AttestationVerificationFailed) with the reason, and Glance holds nothing of its digest', async (name, pattern) => {
    const conditions = state.resources[`${ns}/Image/${name}`]?.conditions ?? [];
    expect(conditions.find((x) => x.type === 'Stalled')).toMatchObject({ status: 'True', reason: 'AttestationVerificationFailed' });
    expect(conditions.find((x) => x.type === 'Ready')).toMatchObject({ status: 'False', reason: 'AttestationVerificationFailed' });
    expect(conditions.find((x) => x.type === 'Stalled')?.message).toMatch(pattern);
    expect(await glanceByDigest(cases[name]!.digest)).toBe(0);
  });

  it('kupenstack image import --verify takes the same attestations: an attested digest imports, a CRITICAL finding is refused before Glance is asked', async () => {
    const t = await testProject('attest-cli');
    const policy = join(dir, 'cli-policy.yaml');
    writeFileSync(
      policy,
      `publicKey: {file: "${join(dir, 'trusted.pub')}"}\nattestations:\n  - {predicateType: slsaprovenance, conditions: {builderId: "${builder}"}}\n  - {predicateType: vuln, conditions: {maxSeverity: CRITICAL, maxAgeDays: 30}}\n`,
    );
    const cli = (c: Case): Promise<{ code: number; stdout: string; stderr: string }> =>
      exec(process.execPath, ['agent/cli/main.ts', 'image', 'import', `${c.repository}:${c.name}`, '--insecure', '--cloud', testCloudName, '--project', t.ctx.projectId, '--verify', policy, '-o', 'json']).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
      );
    const listed = async (): Promise<{ id: string; oci_manifest_digest?: string }[]> => t.ctx.apis.image.list('/images', 'images', { owner: t.ctx.projectId, visibility: 'all' });
    try {
      const refused = await cli(cases['critical-tag']!);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(new RegExp(`${literal(vulnType)}: tag sha256-[a-f0-9]{64}\\.att: CRITICAL finding CVE-2026-40001`));
      expect(await listed()).toEqual([]);
      const good = cases['good-tag']!;
      const ok = await cli(good);
      expect(ok.code, ok.stderr).toBe(0);
      const out = JSON.parse(ok.stdout) as { id: string; manifestDigest: string; attestations: Array<{ predicateType: string; where: string }> };
      expect(out.manifestDigest).toBe(good.digest);
      expect(out.attestations.map((a) => a.predicateType)).toEqual(['https://slsa.dev/provenance/v0.2', 'https://cosign.sigstore.dev/attestation/vuln/v1']);
      expect((await listed()).map((i) => [i.id, i.oci_manifest_digest])).toEqual([[out.id, good.digest]]);
    } finally {
      for (const i of await listed()) await t.ctx.apis.image.remove(`/images/${i.id}`);
      await t.dispose();
    }
  });
});
