import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../../agent/act/projects.ts';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { applyPath } from '../../../agent/standalone/apply-path.ts';
import { DockerConfigCredentials } from '../../../oci/auth/docker-config.ts';
import { RegistryClient } from '../../../oci/client.ts';
import { fetchManifest } from '../../../oci/manifest.ts';
import { pushDisk } from '../../../oci/push.ts';
import { listReferrers } from '../../../oci/referrers.ts';
import { listTags } from '../../../oci/tags.ts';
import type { PromoteResult } from '../../../oci/promote.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { testCloudName } from '../../support/context.ts';
import { registries } from '../../support/oci.ts';
import { signing } from '../../testbed/signing/peer.ts';
import { qcow2Disk } from '../kinds/image-oci-fixtures.ts';

/**
 * `kupenstack image promote` between two real registries of the test bed:
 * from the anonymous distribution 2.8 (127.0.0.1:5050) to the Bearer-token
 * one (127.0.0.1:5052, credentials from a docker config), both without the
 * referrers API. The source is signed with the real cosign (classic `.sig`
 * tag), attested with `cosign attest` (classic `.att` tag: SLSA provenance)
 * and again in the sigstore-bundle format (an OCI 1.1 referrer kept under the
 * `sha256-<hex>` tag schema: a CycloneDX SBOM). Then an Image that requires
 * the signature imports from the destination into Glance.
 */

const exec = promisify(execFile);
const run = randomBytes(3).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'ks-promote-'));
const password = `promote-${run}`;
const srcRepo = `it/promote-src-${run}`;
const dstRepo = `it/promote-dst-${run}`;
const src = `${registries.plain}/${srcRepo}:v1`;
const dst = `${registries.bearer}/${dstRepo}`;
const dockerConfig = join(dir, 'docker-config.json');
const ns = 'promote';
let digest: string;
let ws: Workspace | undefined;

async function cosign(...args: string[]): Promise<string> {
  const { stdout, stderr } = await exec(signing.cosign, args, { cwd: dir, env: { ...process.env, COSIGN_PASSWORD: password, COSIGN_YES: 'true' } });
  return `${stdout}${stderr}`;
}

const offline = ['--tlog-upload=false', '--use-signing-config=false', '--allow-http-registry', '--allow-insecure-registry'];

/** The CLI as a user runs it; exit code, stdout and stderr. */
async function kupenstack(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, ['agent/cli/main.ts', ...args], { maxBuffer: 16 << 20 }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

async function promoteCli(to: string, ...extra: string[]): Promise<PromoteResult> {
  const res = await kupenstack('image', 'promote', src, to, '--insecure', '--docker-config', dockerConfig, '-o', 'json', ...extra);
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout) as PromoteResult;
}

const bearerClient = (): RegistryClient =>
  new RegistryClient({ registry: registries.bearer, insecure: true, credentials: DockerConfigCredentials.fromFile(dockerConfig) });
const hex = (d: string): string => d.slice('sha256:'.length);

beforeAll(async () => {
  writeFileSync(
    dockerConfig,
    JSON.stringify({ auths: { [registries.bearer]: { auth: Buffer.from(`${registries.user}:${registries.password}`).toString('base64') } } }),
  );
  writeFileSync(join(dir, 'disk.qcow2'), qcow2Disk());
  await Promise.all([cosign('generate-key-pair', '--output-key-prefix', 'trusted'), cosign('generate-key-pair', '--output-key-prefix', 'other')]);
  digest = (await pushDisk(join(dir, 'disk.qcow2'), src, { insecure: true })).manifestDigest;
  const ref = `${registries.plain}/${srcRepo}@${digest}`;
  writeFileSync(
    join(dir, 'provenance.json'),
    JSON.stringify({ buildType: 'https://example.com/vm-image/v1', builder: { id: 'https://ci.example.com/builder' } }),
  );
  writeFileSync(join(dir, 'sbom.json'), JSON.stringify({ bomFormat: 'CycloneDX', specVersion: '1.5', components: [] }));
  await cosign('sign', '--key', 'trusted.key', ...offline, '--new-bundle-format=false', ref);
  await cosign('attest', '--key', 'trusted.key', ...offline, '--new-bundle-format=false', '--type', 'slsaprovenance', '--predicate', 'provenance.json', ref);
  await cosign('attest', '--key', 'trusted.key', ...offline, '--type', 'cyclonedx', '--predicate', 'sbom.json', ref);
  writeFileSync(join(dir, 'trusted.yaml'), `publicKey: {file: ${join(dir, 'trusted.pub')}}\n`);
  writeFileSync(join(dir, 'other.yaml'), `publicKey: {file: ${join(dir, 'other.pub')}}\n`);
  const attestations = (list: string): string => `publicKey: {file: ${join(dir, 'trusted.pub')}}\nattestations:\n${list}`;
  writeFileSync(
    join(dir, 'attested.yaml'),
    attestations('  - {predicateType: slsaprovenance, conditions: {builderId: "https://ci.example.com/builder"}}\n  - {predicateType: cyclonedx}\n'),
  );
  writeFileSync(join(dir, 'scanned.yaml'), attestations('  - {predicateType: slsaprovenance}\n  - {predicateType: vuln, conditions: {maxSeverity: HIGH}}\n'));
}, 240_000);

afterAll(async () => {
  await ws?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('kupenstack image promote (anonymous 5050 → token-auth 5052, real cosign)', () => {
  it('copies the digest byte for byte with its signature, attestation and SBOM referrer; DST verifies', async () => {
    const tags = `sha256-${hex(digest)}`;
    expect(await listTags(new RegistryClient({ registry: registries.plain, insecure: true }), srcRepo)).toEqual([tags, `${tags}.att`, `${tags}.sig`, 'v1']);
    const result = await promoteCli(dst, '--verify', join(dir, 'trusted.yaml'));
    expect(result.digest).toBe(digest);
    expect(result.destination).toBe(`${dst}:v1@${digest}`);
    expect(result.tag).toBe('written');
    expect(result.cosignTags).toEqual([`${tags}.sig`, `${tags}.att`]);
    expect(result.referrers).toBe(1);
    expect(result.blobs.present).toBe(0);
    expect(result.blobs.copied).toBeGreaterThanOrEqual(5);
    expect(result.verified?.source.where).toBe(`tag ${tags}.sig`);
    expect(result.verified?.destination?.key).toBe(`file ${join(dir, 'trusted.pub')}`);
    // Through DST's own API: the tags, the manifest bytes, the referrer (tag schema: 2.8 has no referrers API).
    const c = bearerClient();
    expect(await listTags(c, dstRepo)).toEqual([tags, `${tags}.att`, `${tags}.sig`, 'v1']);
    const at = {
      src: await fetchManifest(new RegistryClient({ registry: registries.plain, insecure: true }), srcRepo, digest),
      dst: await fetchManifest(c, dstRepo, 'v1'),
    };
    expect(at.dst.digest).toBe(digest);
    expect(at.dst.raw.equals(at.src.raw)).toBe(true);
    const referrers = await listReferrers(c, dstRepo, digest);
    expect(referrers.map((r) => r.artifactType)).toEqual(['application/vnd.dev.sigstore.bundle.v0.3+json']);
    const sbom = await fetchManifest(c, dstRepo, referrers[0]!.digest);
    expect(sbom.manifest.kind === 'manifest' && sbom.manifest.subject?.digest).toBe(digest);
    const att = await fetchManifest(c, dstRepo, `${tags}.att`);
    expect(att.manifest.kind === 'manifest' && att.manifest.layers.map((l) => l.mediaType)).toEqual(['application/vnd.dsse.envelope.v1+json']);
    // The real cosign refuses a token realm on a loopback address, so it checks DST's copies one hop on:
    // promoted from DST back to the anonymous registry, the signature, the provenance and the SBOM verify.
    const back = `${registries.plain}/${srcRepo}-back`;
    const res = await kupenstack('image', 'promote', `${dst}@${digest}`, back, '--insecure', '--docker-config', dockerConfig, '-q');
    expect(res.code).toBe(0);
    const verifyArgs = ['--key', join(dir, 'trusted.pub'), '--insecure-ignore-tlog=true', '--allow-http-registry', '--allow-insecure-registry'];
    const there = `${back}@${digest}`;
    await exec(signing.cosign, ['verify', ...verifyArgs, '--new-bundle-format=false', there]);
    await exec(signing.cosign, ['verify-attestation', ...verifyArgs, '--new-bundle-format=false', '--type', 'slsaprovenance', there]);
    await exec(signing.cosign, ['verify-attestation', ...verifyArgs, '--type', 'cyclonedx', there]);
  }, 120_000);

  it('a second promote writes nothing: 0 blobs copied, all present', async () => {
    const res = await kupenstack('image', 'promote', src, dst, '--insecure', '--docker-config', dockerConfig, '-q');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/blobs: 0 copied \(0 bytes\), 0 mounted, [1-9]\d* present/);
    expect(res.stdout).toMatch(/manifests: 0 written, [1-9]\d* present/);
    expect(res.stdout).toContain('tag: already on this digest');
    expect(res.stdout).toContain(`digest: ${digest}`);
  }, 60_000);

  it('--verify with another key writes nothing to a fresh DST repository and names SRC, the reason and the fix', async () => {
    const fresh = `${registries.bearer}/${dstRepo}-refused`;
    const res = await kupenstack('image', 'promote', src, fresh, '--insecure', '--docker-config', dockerConfig, '--verify', join(dir, 'other.yaml'));
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain(`${src}@${digest}: refused, no signature verifies with the trusted key (file ${join(dir, 'other.pub')})`);
    expect(res.stderr).toMatch(/tag sha256-[a-f0-9]{64}\.sig: signed by another key/);
    expect(res.stderr).toContain(`Nothing was written to ${fresh}`);
    expect(res.stderr).toContain('sign ');
    await expect(listTags(bearerClient(), `${dstRepo}-refused`)).rejects.toMatchObject({ code: 'oci.not-found' });
  }, 60_000);

  it("--verify with attestations: SRC's provenance (its builder) and SBOM are checked before the copy and again at DST", async () => {
    const to = `${registries.bearer}/${dstRepo}-attested`;
    const result = await promoteCli(to, '--verify', join(dir, 'attested.yaml'));
    expect(result.digest).toBe(digest);
    expect(result.attested?.source.map((a) => a.predicateType)).toEqual(['https://slsa.dev/provenance/v0.2', 'https://cyclonedx.org/bom']);
    expect(result.attested?.source[0]?.where).toBe(`tag sha256-${hex(digest)}.att`);
    expect(result.attested?.destination?.map((a) => a.predicateType)).toEqual(['https://slsa.dev/provenance/v0.2', 'https://cyclonedx.org/bom']);
    expect(result.attested?.destination?.every((a) => a.signer === `file ${join(dir, 'trusted.pub')}`)).toBe(true);
  }, 120_000);

  it('--verify requiring an attestation SRC lacks (a vulnerability scan) writes nothing and names it', async () => {
    const fresh = `${registries.bearer}/${dstRepo}-unscanned`;
    const res = await kupenstack('image', 'promote', src, fresh, '--insecure', '--docker-config', dockerConfig, '--verify', join(dir, 'scanned.yaml'));
    expect(res.code).not.toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain(`${src}@${digest}: refused, attestation vuln (https://cosign.sigstore.dev/attestation/vuln/v1): absent`);
    expect(res.stderr).toContain(`Nothing was written to ${fresh}`);
    await expect(listTags(bearerClient(), `${dstRepo}-unscanned`)).rejects.toMatchObject({ code: 'oci.not-found' });
  }, 60_000);

  it("an index with its child and the child's referrers, on the same registry: blobs mounted, none copied", async () => {
    const plain = new RegistryClient({ registry: registries.plain, insecure: true });
    const child = await fetchManifest(plain, srcRepo, digest);
    const index = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest, size: child.raw.length, platform: { architecture: 'amd64', os: 'linux' } },
      ],
    });
    const put = await fetch(`http://${registries.plain}/v2/${srcRepo}/manifests/multi`, {
      method: 'PUT',
      body: index,
      headers: { 'content-type': 'application/vnd.oci.image.index.v1+json' },
    });
    expect(put.status).toBe(201);
    const to = `${registries.plain}/${srcRepo}-mounted`;
    // --dry-run first: both sides read, the index verified through its signed child, nothing written.
    const dry = await kupenstack(
      'image',
      'promote',
      `${registries.plain}/${srcRepo}:multi`,
      to,
      '--insecure',
      '-o',
      'json',
      '--dry-run',
      '--verify',
      join(dir, 'trusted.yaml'),
    );
    expect(dry.code).toBe(0);
    const planned = JSON.parse(dry.stdout) as PromoteResult;
    expect(planned.dryRun).toBe(true);
    expect(planned.verified?.source.digest).toBe(digest);
    expect(planned.blobs.mounted).toBeGreaterThanOrEqual(5);
    await expect(listTags(plain, `${srcRepo}-mounted`)).rejects.toMatchObject({ code: 'oci.not-found' });
    const res = await kupenstack('image', 'promote', `${registries.plain}/${srcRepo}:multi`, to, '--insecure', '-o', 'json');
    expect(res.code).toBe(0);
    const result = JSON.parse(res.stdout) as PromoteResult;
    expect(result.destination).toMatch(new RegExp(`^${to}:multi@sha256:[a-f0-9]{64}$`));
    expect(result.blobs.copied).toBe(0);
    expect(result.blobs.mounted).toBeGreaterThanOrEqual(5);
    expect(result.cosignTags).toEqual([`sha256-${hex(digest)}.sig`, `sha256-${hex(digest)}.att`]);
    expect(result.referrers).toBe(1);
    const tags = await listTags(plain, `${srcRepo}-mounted`);
    expect(tags).toEqual(['multi', `sha256-${hex(digest)}`, `sha256-${hex(digest)}.att`, `sha256-${hex(digest)}.sig`]);
  }, 60_000);

  it('an Image that requires the signature and the attestations imports from DST into Glance', async () => {
    ws = new Workspace();
    const secretsDir = join(dir, 'secrets');
    mkdirSync(join(secretsDir, ns, 'regcred'), { recursive: true });
    writeFileSync(
      join(secretsDir, ns, 'regcred', '.dockerconfigjson'),
      JSON.stringify({ auths: { [registries.bearer]: { auth: Buffer.from(`${registries.user}:${registries.password}`).toString('base64') } } }),
    );
    ws.write({
      'image.yaml': `${head('Image', 'promoted', ns)}  source:\n    oci: {repository: "${dst}", tag: v1, insecure: true, sharing: private, credentialsSecretRef: {name: regcred}}\n  verify:\n    publicKey: {file: "${join(dir, 'trusted.pub')}"}\n` +
        `    attestations:\n      - {predicateType: slsaprovenance, conditions: {builderId: "https://ci.example.com/builder"}}\n      - {predicateType: cyclonedx}\n`,
    });
    const outcome = await applyPath({
      path: ws.repo,
      cloud: testCloudName,
      config: ws.config,
      prune: false,
      allowMassDelete: false,
      log: () => undefined,
      secrets: new EnvFileSecretResolver({ secretsDir }),
    });
    expect(outcome.report!.errors).toEqual([]);
    expect(outcome.report!.created).toBe(1);
    const [project] = (await ownedProjects(ws.cloud, ws.owner)).filter((p) => p.namespace === ns);
    const apis = await ws.cloud.forProject(project!.id);
    const images = await apis.image.list<{ name: string; status: string; properties?: unknown }>('/images', 'images', {
      owner: project!.id,
      visibility: 'all',
    });
    expect(images.map((i) => `${i.name} ${i.status}`)).toEqual(['promoted active']);
  }, 300_000);
});
