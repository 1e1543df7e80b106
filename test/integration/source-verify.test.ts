import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import git from 'isomorphic-git';
import { createMessage, generateKey, type PrivateKey, readPrivateKey, sign } from 'openpgp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitCredentials } from '../../agent/source/credentials.ts';
import { GitSource } from '../../agent/source/git.ts';
import { SourceError } from '../../agent/source/source.ts';
import { CommitVerifier } from '../../agent/source/verify-signature.ts';
import { TestRepo } from '../support/git-remote.ts';
import { peers } from '../support/peers.ts';

// Signed-commit mode against the real Git server: commits signed by keys made
// here with openpgp (through isomorphic-git's onSign) and by the real gpg CLI
// (git commit -S), pushed with the git CLI, fetched and verified by the source.

const credentials = new GitCredentials(peers.git.user, peers.git.password);
const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

interface TestKey {
  publicKey: string;
  privateKey: string;
  fingerprint: string;
  keyId: string;
}

async function newKey(name: string): Promise<TestKey> {
  const { publicKey, privateKey } = await generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name, email: `${name.toLowerCase()}@example.invalid` }], format: 'armored' });
  const key = await readPrivateKey({ armoredKey: privateKey });
  return { publicKey, privateKey, fingerprint: key.getFingerprint().toUpperCase(), keyId: key.getKeyID().toHex().toUpperCase() };
}

/** Commits the working copy with isomorphic-git, signed through onSign the way git signs (detached, over the raw commit). */
async function signedCommit(repo: TestRepo, key: TestKey, files: Record<string, string>, message: string): Promise<string> {
  for (const [path, content] of Object.entries(files)) fs.writeFileSync(join(repo.work, path), content);
  repo.git('add', '-A');
  return git.commit({
    fs,
    dir: repo.work,
    message,
    author: { name: 'Signer', email: 'signer@example.invalid' },
    signingKey: key.privateKey,
    onSign: async ({ payload, secretKey }) => {
      const signingKeys: PrivateKey = await readPrivateKey({ armoredKey: secretKey });
      const message = await createMessage({ binary: new TextEncoder().encode(payload) });
      // openpgp's return type goes through web-stream types the linter cannot resolve.
      const signature: unknown = await sign({ message, signingKeys, detached: true, format: 'armored' });
      if (typeof signature !== 'string') throw new Error('openpgp returned no armored signature');
      return { signature };
    },
  });
}

async function failure(promise: Promise<unknown>): Promise<SourceError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(SourceError);
    return err as SourceError;
  }
  throw new Error('expected the fetch to fail');
}

let trusted: TestKey;
let stranger: TestKey;
beforeAll(async () => {
  [trusted, stranger] = await Promise.all([newKey('Trusted'), newKey('Stranger')]);
});

async function setup(prefix: string): Promise<{ repo: TestRepo; src: GitSource; cacheDir: string }> {
  const repo = await TestRepo.create(prefix);
  cleanup.push(() => repo.dispose());
  const cacheDir = await mkdtemp(join(tmpdir(), 'ks-verify-cache-'));
  cleanup.push(() => rm(cacheDir, { recursive: true, force: true }));
  const verifier = await CommitVerifier.fromArmored([trusted.publicKey]);
  const src = new GitSource({ url: repo.url, ref: { branch: 'main' }, credentials, cacheDir, verifier });
  return { repo, src, cacheDir };
}

describe('Git source: signed commits only (verify.mode: head)', () => {
  it('accepts a commit signed by a trusted key and says which key signed it', async () => {
    const { repo, src } = await setup('src-signed');
    const commit = await signedCommit(repo, trusted, { 'a.yaml': 'a: 1\n' }, 'signed');
    repo.push();
    // git itself sees the signature (the object on the server carries gpgsig).
    expect(repo.git('cat-file', '-p', commit)).toContain('-----BEGIN PGP SIGNATURE-----');

    const artifact = await src.fetch();
    expect(artifact.revision).toBe(`main@sha1:${commit}`);
    expect(artifact.signedBy).toEqual({ keyId: trusted.keyId, fingerprint: trusted.fingerprint });
    expect(await readdir(artifact.dir)).toEqual(['a.yaml']);
    expect(src.description).toMatch(/signed commits only/);
  });

  it('refuses an unsigned commit and checks nothing out, then accepts the next signed one', async () => {
    const { repo, src, cacheDir } = await setup('src-unsigned');
    const unsigned = await repo.commit({ 'a.yaml': 'a: 1\n' }, 'not signed');
    repo.push();
    const err = await failure(src.fetch());
    expect(err.failure).toBe('signature');
    expect(err.message).toContain(`commit ${unsigned} is not signed`);
    const checkouts = (await readdir(cacheDir, { recursive: true })).filter((e) => /rev-[0-9a-f]{40}$/.test(e));
    expect(checkouts).toEqual([]);

    const signed = await signedCommit(repo, trusted, { 'a.yaml': 'a: 2\n' }, 'signed now');
    repo.push();
    expect((await src.fetch()).revision).toBe(`main@sha1:${signed}`);
  });

  it('refuses a commit signed by a key that is not trusted, naming the commit and the key id found', async () => {
    const { repo, src } = await setup('src-stranger');
    const commit = await signedCommit(repo, stranger, { 'a.yaml': 'a: 1\n' }, 'signed by someone else');
    repo.push();
    const err = await failure(src.fetch());
    expect(err.failure).toBe('signature');
    expect(err.message).toContain(`commit ${commit} is signed with key ${stranger.keyId}`);
    expect(err.message).toContain(trusted.fingerprint);
    expect(err.message).not.toContain('PRIVATE KEY');
  });

  it('accepts a commit signed by the real gpg CLI (git commit -S) when its public key is trusted', async () => {
    const repo = await TestRepo.create('src-gpg');
    cleanup.push(() => repo.dispose());
    const gnupg = join(repo.home, '.gnupg');
    fs.mkdirSync(gnupg, { mode: 0o700 });
    const gpg = (...args: string[]): string => execFileSync('gpg', ['--batch', '--homedir', gnupg, ...args], { encoding: 'utf8', env: repo.env });
    // gpg starts its own agent for this home; stop exactly that one afterwards.
    cleanup.push(() => {
      execFileSync('gpgconf', ['--homedir', gnupg, '--kill', 'gpg-agent'], { env: repo.env });
    });
    gpg('--passphrase', '', '--quick-generate-key', 'Gpg Signer <gpg@example.invalid>', 'ed25519', 'sign', 'never');
    const fingerprint = (/^fpr:+([0-9A-F]{40}):/m.exec(gpg('--with-colons', '--list-secret-keys')) ?? [])[1] ?? '';
    expect(fingerprint).toMatch(/^[0-9A-F]{40}$/);
    const publicKey = gpg('--armor', '--export', fingerprint);

    const commit = await repo.commit({ 'a.yaml': 'a: gpg\n' }, 'signed by gpg', []);
    repo.git('-c', `user.signingkey=${fingerprint}`, '-c', `gpg.program=gpg`, 'commit', '-q', '--amend', '--no-edit', '-S');
    const signed = repo.head();
    expect(signed).not.toBe(commit);
    repo.git('verify-commit', signed); // throws unless git itself accepts the signature
    repo.push();

    const cacheDir = await mkdtemp(join(tmpdir(), 'ks-verify-cache-'));
    cleanup.push(() => rm(cacheDir, { recursive: true, force: true }));
    const src = new GitSource({ url: repo.url, ref: { branch: 'main' }, credentials, cacheDir, verifier: await CommitVerifier.fromArmored([trusted.publicKey, publicKey]) });
    const artifact = await src.fetch();
    expect(artifact.revision).toBe(`main@sha1:${signed}`);
    expect(artifact.signedBy?.fingerprint).toBe(fingerprint);

    // The same commit with only the openpgp-made key trusted is refused.
    const strict = new GitSource({ url: repo.url, ref: { branch: 'main' }, credentials, cacheDir, verifier: await CommitVerifier.fromArmored([trusted.publicKey]) });
    expect((await failure(strict.fetch())).failure).toBe('signature');
  });
});
