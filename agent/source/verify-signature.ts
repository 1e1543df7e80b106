import * as fs from 'node:fs';
import git from 'isomorphic-git';
import { createMessage, type Key, readKeys, readSignature, verify } from 'openpgp';
import { SourceConfigError } from './config-error.ts';
import { SourceError } from './source.ts';

/** What a valid signature was made with. */
export interface SignatureCheck {
  /** 16-hex key ID of the (sub)key that made the signature, upper case as `gpg` prints it. */
  keyId: string;
  /** Fingerprint of the trusted primary key it belongs to. */
  fingerprint: string;
}

/**
 * Signed-commit verification (`verify.mode: head`): the checked-out commit
 * must carry an OpenPGP signature made by one of the trusted public keys.
 * Unsigned commits, unknown keys, bad signatures and other signature formats
 * (SSH, X.509) are refused with a `signature` failure.
 */
export class CommitVerifier {
  readonly #keys: Key[];

  private constructor(keys: Key[]) {
    this.#keys = keys;
  }

  /** Reads armored public keys (one armor block may hold several). Private keys are refused: only public keys belong here. */
  static async fromArmored(armoredKeys: readonly string[]): Promise<CommitVerifier> {
    const keys: Key[] = [];
    for (const [index, armored] of armoredKeys.entries()) {
      if (/-----BEGIN PGP PRIVATE KEY BLOCK-----/.test(armored))
        throw new SourceConfigError(`trusted key #${index + 1} is a private key; give only the public key (gpg --armor --export <key id>)`);
      if (/^(ssh-|ecdsa-sha2-|sk-)/.test(armored.trim()))
        throw new SourceConfigError(
          `trusted key #${index + 1} is an SSH public key; only OpenPGP public keys are supported for commit verification (gpg --armor --export <key id>)`,
        );
      try {
        keys.push(...(await readKeys({ armoredKeys: armored })));
      } catch (err) {
        throw new SourceConfigError(
          `trusted key #${index + 1} is not an armored OpenPGP public key (${err instanceof Error ? err.message : String(err)}); export it with gpg --armor --export <key id>`,
        );
      }
    }
    if (keys.length === 0)
      throw new SourceConfigError(
        'signature verification is on (verify.mode: head) but no trusted public key is configured; add the public keys of the people or bots that sign commits',
      );
    return new CommitVerifier(keys);
  }

  /** Fingerprints of the trusted keys (for descriptions and messages). */
  get fingerprints(): string[] {
    return this.#keys.map((k) => k.getFingerprint().toUpperCase());
  }

  /** Checks `commit` in the repository `gitdir`; returns the signing key or throws a SourceError('signature'). */
  async verifyCommit(gitdir: string, commit: string): Promise<SignatureCheck> {
    const { commit: parsed, payload } = await git.readCommit({ fs, gitdir, oid: commit });
    const armored = parsed.gpgsig;
    if (!armored)
      throw new SourceError(
        'signature',
        `commit ${commit} is not signed; signature verification requires every applied commit to be signed by a trusted key (git commit -S), or set verify.mode: none`,
      );
    if (armored.includes('BEGIN SSH SIGNATURE'))
      throw new SourceError(
        'signature',
        `commit ${commit} carries an SSH signature; only OpenPGP signatures are supported. Sign with a GPG key (git config gpg.format openpgp)`,
      );
    if (!armored.includes('BEGIN PGP SIGNATURE'))
      throw new SourceError('signature', `commit ${commit} carries a signature that is not OpenPGP (X.509?); sign with a GPG key`);
    let signature;
    try {
      signature = await readSignature({ armoredSignature: armored });
    } catch (err) {
      throw new SourceError('signature', `commit ${commit} has an unreadable OpenPGP signature; re-sign the commit`, { cause: err });
    }
    const keyIds = signature.getSigningKeyIDs().map((id) => id.toHex().toUpperCase());
    const found = keyIds.join(', ') || 'unknown';
    // Git signs the commit bytes as they are (a binary detached signature).
    const message = await createMessage({ binary: Buffer.from(payload, 'utf8') });
    const result = await verify({ message, signature, verificationKeys: this.#keys, format: 'binary' });
    for (const sig of result.signatures) {
      const key = this.#keys.find((k) => k.getKeys(sig.keyID).length > 0);
      if (!key) continue;
      try {
        await sig.verified;
      } catch (err) {
        throw new SourceError(
          'signature',
          `commit ${commit} has a signature by key ${sig.keyID.toHex().toUpperCase()} that does not verify ` +
            `(${err instanceof Error ? err.message : String(err)}); the commit or its signature was altered, or the key is expired or revoked`,
          { cause: err },
        );
      }
      return { keyId: sig.keyID.toHex().toUpperCase(), fingerprint: key.getFingerprint().toUpperCase() };
    }
    throw new SourceError(
      'signature',
      `commit ${commit} is signed with key ${found}, which is not one of the trusted keys (${this.fingerprints.join(', ')}); ` +
        `add that public key to the trusted keys if its owner may publish revisions`,
    );
  }
}

/** Reads armored public keys from files (the standalone agent's kupenstack.yaml names them). */
export function readKeyFiles(paths: readonly string[]): string[] {
  return paths.map((path) => {
    try {
      return fs.readFileSync(path, 'utf8');
    } catch (err) {
      throw new SourceConfigError(`the trusted key file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the path`);
    }
  });
}
