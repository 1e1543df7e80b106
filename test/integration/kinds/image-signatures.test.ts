import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPath, planPath } from '../../../agent/standalone/apply-path.ts';
import { ownedProjects } from '../../../agent/act/projects.ts';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { fetchManifest } from '../../../oci/manifest.ts';
import { pushDisk } from '../../../oci/push.ts';
import { listReferrers } from '../../../oci/referrers.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { client, oras } from '../../support/oci.ts';
import { testCloudName } from '../../support/context.ts';
import { qcow2Disk } from './image-oci-fixtures.ts';
import { signing } from '../../testbed/signing/peer.ts';

/**
 * `spec.verify`: images signed by the real cosign (v3, key pair made by
 * `cosign generate-key-pair`) against an OCI 1.1 registry with the referrers
 * API (sigstore bundles, 127.0.0.1:5060) and distribution 2.8 (classic
 * `sha256-<hex>.sig` tags, 127.0.0.1:5050). Signed with the trusted key:
 * imported. Unsigned, signed by another key, or carrying a signature copied
 * from another image: refused in the plan and in the apply, and Glance holds
 * no image for them.
 */

const exec = promisify(execFile);
const cosignBin = signing.cosign;
const referrersRegistry = signing.referrersRegistry;
const distribution = '127.0.0.1:5050';
const run = randomBytes(3).toString('hex');
const ns = 'sigs';
const password = `signatures-${run}`;
const dir = mkdtempSync(join(tmpdir(), 'ks-signatures-'));
let ws: Workspace;

async function cosign(...args: string[]): Promise<string> {
  const { stdout, stderr } = await exec(cosignBin, args, { cwd: dir, env: { ...process.env, COSIGN_PASSWORD: password, COSIGN_YES: 'true' } });
  return `${stdout}${stderr}`;
}

/**
 * A fresh disk pushed; the manifest digest. The signed images go through the
 * `kupenstack image push` CLI; the others through the same pushDisk() in
 * this process (a node start per push costs ~10 s on the shared cores).
 */
async function push(ref: string, cli: boolean): Promise<string> {
  const file = join(dir, `disk-${randomBytes(3).toString('hex')}.qcow2`);
  writeFileSync(file, qcow2Disk());
  if (!cli) return (await pushDisk(file, ref, { insecure: true })).manifestDigest;
  const { stdout } = await exec(process.execPath, ['agent/cli/main.ts', 'image', 'push', file, ref, '--insecure', '--quiet']);
  const digest = /disk \S+@(sha256:[a-f0-9]{64})/.exec(stdout)?.[1];
  if (!digest) throw new Error(`image push printed no digest: ${stdout}`);
  return digest;
}

/** Signs `repo@digest` with a key file of dir; classic = the v2 `.sig` tag layout, else a bundle through the referrers API. */
async function sign(key: string, ref: string, classic: boolean): Promise<void> {
  await cosign('sign', '--key', key, '--tlog-upload=false', '--use-signing-config=false', '--allow-http-registry', '--allow-insecure-registry', ...(classic ? ['--new-bundle-format=false'] : []), ref);
}

interface Case {
  name: string;
  repository: string;
  tag: string;
  digest: string;
}
const cases: Record<string, Case> = {};

async function pushCase(name: string, registry: string, repo: string, cli = false): Promise<Case> {
  const c = { name, repository: `${registry}/${repo}`, tag: name, digest: await push(`${registry}/${repo}:${name}`, cli) };
  cases[name] = c;
  return c;
}

const imageYaml = (c: Case): string => `${head('Image', c.name, ns)}  source:\n    oci: {repository: "${c.repository}", tag: ${c.tag}, insecure: true, sharing: private}\n  verify:\n    publicKey: {file: "${join(dir, 'trusted.pub')}"}\n`;

interface GlanceImage {
  id: string;
  name: string;
  status: string;
}

async function glanceImages(): Promise<GlanceImage[]> {
  const [project] = (await ownedProjects(ws.cloud, ws.owner)).filter((p) => p.namespace === ns);
  if (!project) return [];
  const apis = await ws.cloud.forProject(project.id);
  const q = { owner: project.id, visibility: 'all' };
  return [...(await apis.image.list<GlanceImage>('/images', 'images', q)), ...(await apis.image.list<GlanceImage>('/images', 'images', { ...q, os_hidden: true }))];
}

beforeAll(async () => {
  ws = new Workspace();
  await Promise.all([cosign('generate-key-pair', '--output-key-prefix', 'trusted'), cosign('generate-key-pair', '--output-key-prefix', 'other')]);
  const zotRepo = `signatures/${run}`;
  const distRepo = `it/signatures-${run}`;
  const setups = ([[referrersRegistry, zotRepo, false, 'ref'], [distribution, distRepo, true, 'tag']] as const).map(async ([registry, repo, classic, suffix]) => {
    const [signed, , other] = await Promise.all([
      pushCase(`signed-${suffix}`, registry, repo, true),
      pushCase(`unsigned-${suffix}`, registry, repo),
      pushCase(`otherkey-${suffix}`, registry, repo),
      pushCase(`copied-${suffix}`, registry, repo),
    ]);
    await Promise.all([sign(join(dir, 'trusted.key'), `${signed.repository}@${signed.digest}`, classic), sign(join(dir, 'other.key'), `${other.repository}@${other.digest}`, classic)]);
  });
  await Promise.all(setups);
  await copySignatures();
  ws.write({ 'images.yaml': Object.values(cases).map(imageYaml).join('---\n') });
}, 240_000);

/**
 * A valid signature by the trusted key, of another image, put where the
 * verifier looks for this one: the signed image's `.sig` manifest under the
 * copied image's tag (2.8), and its bundle referrer re-pointed at the copied
 * image's digest (the referrers registry).
 */
async function copySignatures(): Promise<void> {
  const signedTag = cases['signed-tag']!;
  const copiedTag = cases['copied-tag']!;
  const hex = (d: string): string => d.slice('sha256:'.length);
  const sigFile = join(dir, 'sig-manifest.json');
  writeFileSync(sigFile, await oras('manifest', 'fetch', '--plain-http', `${signedTag.repository}:sha256-${hex(signedTag.digest)}.sig`));
  await oras('manifest', 'push', '--plain-http', `${copiedTag.repository}:sha256-${hex(copiedTag.digest)}.sig`, sigFile);

  const signedRef = cases['signed-ref']!;
  const copiedRef = cases['copied-ref']!;
  const repo = signedRef.repository.slice(referrersRegistry.length + 1);
  const c = client(referrersRegistry);
  const referrers = await listReferrers(c, repo, signedRef.digest);
  expect(referrers.length).toBeGreaterThan(0);
  const bundleManifest = await fetchManifest(c, repo, referrers[0]!.digest);
  const doc = JSON.parse(bundleManifest.raw.toString('utf8')) as { subject: { digest: string; size: number; mediaType: string } };
  const target = await fetchManifest(c, repo, copiedRef.digest);
  doc.subject = { ...doc.subject, digest: copiedRef.digest, size: target.raw.length };
  const file = join(dir, 'bundle-manifest.json');
  writeFileSync(file, JSON.stringify(doc));
  await oras('manifest', 'push', '--plain-http', `${copiedRef.repository}@${digestOfFile(file)}`, file);
  const after = await listReferrers(c, repo, copiedRef.digest);
  expect(after.length).toBe(1);
}

const digestOfFile = (file: string): string => `sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;

afterAll(async () => {
  await ws?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const secrets = (): EnvFileSecretResolver => new EnvFileSecretResolver({ secretsDir: join(dir, 'secrets') });

const refusals: Array<[string, RegExp]> = [
  ['unsigned', /is not signed: no cosign signature in the referrers of sha256:[a-f0-9]{64}, the tag sha256-[a-f0-9]{64}\.sig/],
  ['otherkey', /no signature verifies with the trusted key \(file .*trusted\.pub\): .*signed by another key/],
  ['copied', /the signature is for (sha256:[a-f0-9]{64}), not (sha256:[a-f0-9]{64}) \(a signature copied from another image\)/],
];

describe('Image spec.verify with the real cosign', () => {
  it('plans the trusted-signed images as creates and refuses the others, naming the reference and the reason', async () => {
    const outcome = await planPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined, secrets: secrets() });
    const report = outcome.report!;
    expect(report.changes.map((c) => `${c.address} ${c.action}`).sort()).toEqual([`${ns}/Image/signed-ref create`, `${ns}/Image/signed-tag create`]);
    expect(report.errors.map((e) => e.address).sort()).toEqual(
      ['copied-ref', 'copied-tag', 'otherkey-ref', 'otherkey-tag', 'unsigned-ref', 'unsigned-tag'].map((n) => `${ns}/Image/${n}`),
    );
    expect(refusals.length).toBe(3);
    for (const [kind, pattern] of refusals) {
      for (const suffix of ['ref', 'tag']) {
        const c = cases[`${kind}-${suffix}`]!;
        const e = report.errors.find((x) => x.address === `${ns}/Image/${c.name}`)!;
        expect(e.code).toBe('image.signature');
        expect(e.message).toContain(`images.yaml:`);
        expect(e.message).toContain(`${c.repository}:${c.tag}@${c.digest}`);
        expect(e.message).toMatch(pattern);
      }
    }
    const copied = report.errors.find((x) => x.address === `${ns}/Image/copied-tag`)!;
    const [, signedFor, notFor] = refusals[2]![1].exec(copied.message)!;
    expect([signedFor, notFor]).toEqual([cases['signed-tag']!.digest, cases['copied-tag']!.digest]);
  });

  it('kupenstack plan prints the refusals and exits 1', async () => {
    const res = await exec(process.execPath, ['agent/cli/main.ts', 'plan', ws.repo, '--cloud', testCloudName, '--owner', ws.owner]).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
    );
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`error: ${ns}/Image/unsigned-tag: images.yaml:`);
    expect(res.stderr).toMatch(/error: sigs\/Image\/otherkey-ref: .*signed by another key/);
  });

  it('imports only the trusted-signed images: Glance holds nothing for the refused ones', async () => {
    const outcome = await applyPath({ path: ws.repo, cloud: testCloudName, config: ws.config, prune: false, allowMassDelete: false, log: () => undefined, secrets: secrets() });
    const report = outcome.report!;
    expect(report.created).toBe(2);
    expect(report.errors.map((e) => e.code)).toEqual(Array(6).fill('image.signature'));
    const images = await glanceImages();
    expect(images.map((i) => `${i.name} ${i.status}`).sort()).toEqual(['signed-ref active', 'signed-tag active']);
  });
});
