import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { AgentConfig } from '../config/config.ts';
import type { SyncConfig } from '../config/syncs.ts';
import { KupenstackError } from '../errors.ts';
import { resolveCredentials, type GitCredentials } from '../source/credentials.ts';
import { GitSource } from '../source/git.ts';
import { checkGitRef, describeRef, type GitRef } from '../source/git-ref.ts';
import { redactUrl } from '../source/git-url.ts';
import { SourceError, type Artifact, type Source } from '../source/source.ts';
import { CommitVerifier, readKeyFiles } from '../source/verify-signature.ts';
import { DirectorySource } from '../source/directory.ts';

/** The Source of a Sync: a Git repository (cached under the state dir) or a local directory. */
export function createSource(sync: SyncConfig, config: AgentConfig): Source {
  if (sync.source.directory) return new DirectorySource({ directory: sync.source.directory.path, path: sync.path });
  return new RefreshingGitSource(sync, join(config.stateDir, 'git-cache'));
}

/**
 * A GitSource whose credentials and trusted keys are read again before every
 * fetch, so a fixed password file or a rotated token takes effect without
 * restarting the agent. The Git cache is on disk, so a new GitSource after
 * a credential change fetches nothing it already has.
 */
class RefreshingGitSource implements Source {
  readonly kind = 'git' as const;
  readonly description: string;
  readonly #sync: SyncConfig;
  readonly #ref: GitRef;
  readonly #cacheDir: string;
  #inner?: GitSource;
  #key?: string;

  constructor(sync: SyncConfig, cacheDir: string) {
    this.#sync = sync;
    this.#ref = checkGitRef(sync.source.git!.ref);
    this.#cacheDir = cacheDir;
    const path = sync.path.replace(/^\.\/?$/, '');
    this.description = `git ${redactUrl(sync.source.git!.url)} ${describeRef(this.#ref)}${path ? ` path ${path}` : ''}`;
  }

  async fetch(signal?: AbortSignal): Promise<Artifact> {
    const git = this.#sync.source.git!;
    let credentials: GitCredentials | undefined;
    let verifier: CommitVerifier | undefined;
    let keys: string[] = [];
    try {
      credentials = resolveCredentials(git.credentials);
      if (git.verify?.mode === 'head' && git.verify.publicKeysFile) {
        keys = readKeyFiles([git.verify.publicKeysFile]);
        verifier = await CommitVerifier.fromArmored(keys);
      }
    } catch (err) {
      // A missing password file or key file is the user's to fix, like a wrong password.
      if (err instanceof KupenstackError && !(err instanceof SourceError)) throw new SourceError(git.verify && keys.length === 0 && credentials ? 'signature' : 'auth', err.message, { cause: err });
      throw err;
    }
    const key = createHash('sha256')
      .update(credentials ? `${credentials.username}\0${credentials.password}` : '')
      .update('\0')
      .update(keys.join('\0'))
      .digest('hex');
    if (!this.#inner || key !== this.#key) {
      await this.#inner?.close();
      this.#inner = new GitSource({ url: git.url, ref: this.#ref, path: this.#sync.path, credentials, cacheDir: this.#cacheDir, verifier });
      this.#key = key;
    }
    return this.#inner.fetch(signal);
  }

  async close(): Promise<void> {
    await this.#inner?.close();
  }
}
