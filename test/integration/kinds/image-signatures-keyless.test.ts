import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath, planPath } from '../../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../../agent/act/projects.ts';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { pushDisk } from '../../../oci/push.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { testCloudName, testProject } from '../../support/context.ts';
import { qcow2Disk } from './image-oci-fixtures.ts';
import { signing } from '../../testbed/signing/peer.ts';

/**
 * `spec.verify.keyless` with the real cosign, offline: no Fulcio or Rekor is
 * reachable here, so a local CA (openssl) issues a Fulcio-shaped signing
 * certificate (an e-mail SAN and the OIDC issuer extension
 * 1.3.6.1.4.1.57264.1.8), cosign signs with it (`--certificate`,
 * `--tlog-upload=false`), and `cosign trusted-root create` writes the
 * trusted root that names the CA. Signed through the OCI 1.1 referrers API
 * (a sigstore bundle, 127.0.0.1:5060) and the classic `.sig` tag
 * (distribution 2.8, 127.0.0.1:5050). The expected identity and issuer
 * import; another identity, a certificate of another CA, and a policy that
 * asks for the transparency log (the default) are refused with the reason,
 * and Glance holds nothing for them.
 */

const exec = promisify(execFile);
const run = randomBytes(3).toString('hex');
const ns = 'keyless';
const dir = mkdtempSync(join(tmpdir(), 'ks-keyless-'));
const password = `keyless-${run}`;
const identity = 'signer@example.test';
const issuer = 'https://issuer.example.test';
let ws: Workspace;

async function sh(cmd: string, args: string[]): Promise<string> {
  const { stdout, stderr } = await exec(cmd, args, { cwd: dir, env: { ...process.env, COSIGN_PASSWORD: password, COSIGN_YES: 'true' } });
  return `${stdout}${stderr}`;
}

const openssl = (...args: string[]): Promise<string> => sh('openssl', args);
const cosign = (...args: string[]): Promise<string> => sh(signing.cosign, args);

/** A CA, and a leaf it signs for `identity` and `issuer`, imported as a cosign key pair `<name>-leaf.key`. */
async function authority(name: string): Promise<void> {
  writeFileSync(
    join(dir, `${name}.cnf`),
    [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      '[dn]',
      `CN = ${name} test CA ${run}`,
      '[ca]',
      'basicConstraints = critical, CA:TRUE',
      'keyUsage = critical, keyCertSign, cRLSign',
      'subjectKeyIdentifier = hash',
      '[leaf]',
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = codeSigning',
      `subjectAltName = email:${identity}`,
      'authorityKeyIdentifier = keyid',
      `1.3.6.1.4.1.57264.1.8 = ASN1:UTF8String:${issuer}`,
      '',
    ].join('\n'),
  );
  await openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}-ca.key`);
  await openssl('req', '-new', '-x509', '-key', `${name}-ca.key`, '-out', `${name}-ca.pem`, '-days', '30', '-config', `${name}.cnf`, '-extensions', 'ca');
  await openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}-leaf.ec`);
  await openssl('pkcs8', '-topk8', '-nocrypt', '-in', `${name}-leaf.ec`, '-out', `${name}-leaf.pem.key`);
  await openssl('req', '-new', '-key', `${name}-leaf.pem.key`, '-subj', `/O=${name}`, '-out', `${name}-leaf.csr`);
  await openssl('x509', '-req', '-in', `${name}-leaf.csr`, '-CA', `${name}-ca.pem`, '-CAkey', `${name}-ca.key`, '-CAcreateserial', '-days', '7', '-extfile', `${name}.cnf`, '-extensions', 'leaf', '-out', `${name}-leaf.crt`);
  await cosign('import-key-pair', '--key', `${name}-leaf.pem.key`, '--output-key-prefix', `${name}-leaf`);
}

interface Case {
  name: string;
  repository: string;
  tag: string;
  digest: string;
}

async function pushCase(name: string, registry: string, repo: string): Promise<Case> {
  const file = join(dir, `disk-${name}.qcow2`);
  writeFileSync(file, qcow2Disk());
  const ref = `${registry}/${repo}:${name}`;
  return { name, repository: `${registry}/${repo}`, tag: name, digest: (await pushDisk(file, ref, { insecure: true })).manifestDigest };
}

/** cosign signs with the CA's leaf certificate, offline; classic = the v2 `.sig` tag layout, else a bundle through the referrers API. */
async function sign(ca: string, c: Case, classic: boolean): Promise<void> {
  await cosign(
    'sign',
    '--key',
    `${ca}-leaf.key`,
    '--certificate',
    `${ca}-leaf.crt`,
    '--certificate-chain',
    `${ca}-ca.pem`,
    '--tlog-upload=false',
    '--use-signing-config=false',
    '--allow-http-registry',
    '--allow-insecure-registry',
    ...(classic ? ['--new-bundle-format=false'] : []),
    `${c.repository}@${c.digest}`,
  );
}

const cases: Record<string, Case> = {};
/** Image name → the case it follows and the keyless policy it asks for. */
const images: Array<{ image: string; follows: string; policy: string }> = [];

const policyYaml = (p: string): string => `  verify:\n    keyless:\n      trustedRoot: {file: "${join(dir, 'trusted_root.json')}"}\n${p}`;
const exactly = `      identity: ${identity}\n      issuer: ${issuer}\n      transparencyLog: false\n`;

beforeAll(async () => {
  ws = new Workspace();
  await Promise.all([authority('trusted'), authority('rogue')]);
  await cosign('trusted-root', 'create', '--fulcio', `url=https://fulcio.example.test,certificate-chain=${join(dir, 'trusted-ca.pem')}`, '--no-default-ctfe', '--no-default-fulcio', '--no-default-rekor', '--no-default-tsa', '--out', join(dir, 'trusted_root.json'));
  const [bundled, classic, rogue] = await Promise.all([
    pushCase('bundle', signing.referrersRegistry, `keyless/${run}`),
    pushCase('classic', '127.0.0.1:5050', `it/keyless-${run}`),
    pushCase('rogue', signing.referrersRegistry, `keyless/${run}`),
  ]);
  cases.bundle = bundled;
  cases.classic = classic;
  cases.rogue = rogue;
  await Promise.all([sign('trusted', bundled, false), sign('trusted', classic, true), sign('rogue', rogue, false)]);
  images.push(
    { image: 'signed-bundle', follows: 'bundle', policy: exactly },
    { image: 'signed-classic', follows: 'classic', policy: `      identityRegExp: '.*@example\\.test'\n      issuerRegExp: 'https://issuer\\.example\\.(test|org)'\n      transparencyLog: false\n` },
    { image: 'wrong-identity', follows: 'bundle', policy: `      identity: other@example.test\n      issuer: ${issuer}\n      transparencyLog: false\n` },
    { image: 'wrong-issuer', follows: 'classic', policy: `      identity: ${identity}\n      issuer: https://accounts.example.org\n      transparencyLog: false\n` },
    { image: 'untrusted-ca', follows: 'rogue', policy: exactly },
    { image: 'needs-tlog', follows: 'bundle', policy: `      identity: ${identity}\n      issuer: ${issuer}\n` },
  );
  const doc = ({ image, follows, policy }: (typeof images)[number]): string => {
    const c = cases[follows]!;
    return `${head('Image', image, ns)}  source:\n    oci: {repository: "${c.repository}", tag: ${c.tag}, insecure: true, sharing: private}\n${policyYaml(policy)}`;
  };
  ws.write({ 'images.yaml': images.map(doc).join('---\n') });
}, 300_000);

afterAll(async () => {
  await ws?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const secrets = (): EnvFileSecretResolver => new EnvFileSecretResolver({ secretsDir: join(dir, 'secrets') });

const refusals: Array<[string, RegExp]> = [
  ['wrong-identity', /no signature verifies with the trusted signer \(other@example\.test from https:\/\/issuer\.example\.test, file .*trusted_root\.json\): .*signed by signer@example\.test, not other@example\.test/],
  ['wrong-issuer', /was issued for https:\/\/issuer\.example\.test, not https:\/\/accounts\.example\.org/],
  ['untrusted-ca', /the signing certificate is not trusted by file .*trusted_root\.json: .*it must chain to one of its certificate authorities/],
  ['needs-tlog', /no transparency-log entry \(signed with --tlog-upload=false\?\), and the policy asks for one; set keyless\.transparencyLog: false/],
];

describe('Image spec.verify.keyless with the real cosign, offline', () => {
  it('plans the images signed by the expected identity and issuer as creates, and refuses the others with the reason', async () => {
    const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined, secrets: secrets() });
    const report = outcome.report!;
    expect(report.changes.map((c) => `${c.address} ${c.action}`).sort()).toEqual([`${ns}/Image/signed-bundle create`, `${ns}/Image/signed-classic create`]);
    expect(report.errors.map((e) => e.address).sort()).toEqual(refusals.map(([n]) => `${ns}/Image/${n}`).sort());
    expect(refusals.length).toBe(4);
    for (const [name, pattern] of refusals) {
      const e = report.errors.find((x) => x.address === `${ns}/Image/${name}`)!;
      const c = cases[images.find((i) => i.image === name)!.follows]!;
      expect(e.code).toBe('image.signature');
      expect(e.message).toContain('images.yaml:');
      expect(e.message).toContain(`${c.repository}:${c.tag}@${c.digest}`);
      expect(e.message).toMatch(pattern);
    }
  });

  it('imports only the images of the trusted signer: Glance holds nothing for the refused ones', async () => {
    const outcome = await applyPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined, secrets: secrets() });
    const report = outcome.report!;
    expect(report.created).toBe(2);
    expect(report.errors.map((e) => e.code)).toEqual(Array(refusals.length).fill('image.signature'));
    const [project] = (await ownedProjects(ws.cloud, ws.owner)).filter((p) => p.namespace === ns);
    expect(project).toBeDefined();
    const apis = await ws.cloud.forProject(project!.id);
    const q = { owner: project!.id, visibility: 'all' };
    const all = [...(await apis.image.list<{ name: string; status: string }>('/images', 'images', q)), ...(await apis.image.list<{ name: string; status: string }>('/images', 'images', { ...q, os_hidden: true }))];
    expect(all.map((i) => `${i.name} ${i.status}`).sort()).toEqual(['signed-bundle active', 'signed-classic active']);
  });

  it('kupenstack image import --verify takes the same policy: the trusted signer imports, another identity is refused before Glance is asked', async () => {
    const t = await testProject('keyless-cli');
    const good = join(dir, 'good-policy.yaml');
    const bad = join(dir, 'bad-policy.yaml');
    writeFileSync(good, `keyless:\n  trustedRoot: {file: "${join(dir, 'trusted_root.json')}"}\n  identity: ${identity}\n  issuer: ${issuer}\n  transparencyLog: false\n`);
    writeFileSync(bad, `keyless:\n  trustedRoot: {file: "${join(dir, 'trusted_root.json')}"}\n  identity: other@example.test\n  issuer: ${issuer}\n  transparencyLog: false\n`);
    const c = cases.bundle!;
    const cli = (policy: string): Promise<{ code: number; stdout: string; stderr: string }> =>
      exec(process.execPath, ['agent/cli/main.ts', 'image', 'import', `${c.repository}:${c.tag}`, '--insecure', '--cloud', testCloudName, '--project', t.ctx.projectId, '--verify', policy, '-o', 'json']).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
      );
    const listed = async (): Promise<{ id: string; oci_manifest_digest?: string }[]> => t.ctx.apis.image.list('/images', 'images', { owner: t.ctx.projectId, visibility: 'all' });
    try {
      const refused = await cli(bad);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/signed by signer@example\.test, not other@example\.test/);
      expect(await listed()).toEqual([]);
      const ok = await cli(good);
      expect(ok.code, ok.stderr).toBe(0);
      const out = JSON.parse(ok.stdout) as { id: string; manifestDigest: string; status: string; signature: { digest: string; key: string } };
      expect(out).toMatchObject({ manifestDigest: c.digest, status: 'active', signature: { digest: c.digest, key: `${identity} (${issuer})` } });
      expect((await listed()).map((i) => [i.id, i.oci_manifest_digest])).toEqual([[out.id, c.digest]]);
    } finally {
      for (const i of await listed()) await t.ctx.apis.image.remove(`/images/${i.id}`);
      await t.dispose();
    }
  });
});
