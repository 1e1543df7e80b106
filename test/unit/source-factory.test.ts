import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from 'openpgp';
import { afterAll, describe, expect, it } from 'vitest';
import { createSource } from '../../agent/source/create-source.ts';
import { CommitVerifier } from '../../agent/source/verify-signature.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('createSource from a Sync spec', () => {
  it('builds a Git or a directory source with a safe description', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'ks-factory-'));
    dirs.push(cacheDir);
    const git = await createSource({ source: { git: { url: 'https://git.example.com/org/infra.git', ref: { semver: '^1.2' } } }, path: './clusters/prod' }, { cacheDir });
    expect(git.kind).toBe('git');
    expect(git.description).toBe('git https://git.example.com/org/infra.git semver ^1.2 path clusters/prod');
    const dir = await createSource({ source: { directory: { path: cacheDir } } }, { cacheDir });
    expect(dir.kind).toBe('directory');
    expect(dir.description).toBe(`directory ${cacheDir}`);
  });

  it('refuses configurations that can never work, saying what to change', async () => {
    const cacheDir = tmpdir();
    await expect(createSource({ source: {} }, { cacheDir })).rejects.toThrow(/exactly one of git, oci or directory/);
    await expect(createSource({ source: { git: { url: 'https://h/r.git', ref: { branch: 'main' }, verify: { mode: 'head' } } } }, { cacheDir })).rejects.toThrow(/no trusted public key is configured/);
    await expect(createSource({ source: { git: { url: 'https://h/r.git', ref: { semver: '???' } } } }, { cacheDir })).rejects.toThrow(/semver range "\?\?\?" is not valid/);
    await expect(createSource({ source: { git: { url: 'ssh://git@h/r.git', ref: { branch: 'main' } } } }, { cacheDir })).rejects.toThrow(/ssh/);
  });
});

describe('trusted keys', () => {
  it('accepts armored public keys and refuses private keys, SSH keys and garbage', async () => {
    const { publicKey, privateKey } = await generateKey({ type: 'ecc', curve: 'ed25519Legacy', userIDs: [{ name: 'K', email: 'k@example.invalid' }], format: 'armored' });
    expect((await CommitVerifier.fromArmored([publicKey])).fingerprints).toHaveLength(1);
    await expect(CommitVerifier.fromArmored([privateKey])).rejects.toThrow(/is a private key; give only the public key/);
    await expect(CommitVerifier.fromArmored(['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE user@host'])).rejects.toThrow(/SSH public key/);
    await expect(CommitVerifier.fromArmored(['hello'])).rejects.toThrow(/trusted key #1 is not an armored OpenPGP public key/);
    await expect(CommitVerifier.fromArmored([])).rejects.toThrow(/no trusted public key/);
  });
});
