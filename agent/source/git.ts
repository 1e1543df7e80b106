import * as fs from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import git, { type HttpClient } from 'isomorphic-git';
import type { Dispatcher } from 'undici';
import { KupenstackError } from '../errors.ts';
import {
  cacheLayout,
  type CacheLayout,
  checkoutDir,
  currentCheckout,
  promoteCheckout,
  readCheckoutMeta,
  removeTemporaryCheckouts,
  temporaryCheckoutDir,
  withCacheLock,
  writeCheckoutMeta,
} from './git-cache.ts';
import { checkoutTree } from './git-checkout.ts';
import { classifyRemoteError, safeCause } from './git-errors.ts';
import { gitHttpClient } from './git-http.ts';
import { bounds } from '../util/bounds.ts';
import { describeRef, type GitRef, gitRevision, refKey } from './git-ref.ts';
import { chooseSemverTag } from '../../lib/semver-tag.ts';
import { checkGitUrl, redactUrl } from './git-url.ts';
import type { GitCredentials } from './credentials.ts';
import { resolveSourcePath, sourcePathOrError } from './source-path.ts';
import { type Artifact, type Source, SourceError } from './source.ts';
import type { CommitVerifier, SignatureCheck } from './verify-signature.ts';
import { pathExists } from '../util/fs.ts';

export interface GitSourceOptions {
  /** https:// (or http://) URL without credentials. */
  url: string;
  ref: GitRef;
  /** Folder inside the repository holding the manifests (default: the root). */
  path?: string;
  /**
   * Resolved by the caller (see credentials.ts); anonymous when absent. A
   * function is called before every fetch, so a rotated token or a fixed
   * password file takes effect without a new source.
   */
  credentials?: GitCredentials | (() => GitCredentials | undefined | Promise<GitCredentials | undefined>);
  /** Survives restarts; several sources may share it. */
  cacheDir: string;
  /** Signed-commit mode: the checked-out commit must be signed by one of its keys. A function is called before every check (rotated keys). */
  verifier?: CommitVerifier | (() => Promise<CommitVerifier>);
  /** undici dispatcher, e.g. an Agent with a private CA (`connect: { ca }`). */
  dispatcher?: Dispatcher;
  /** Called for every HTTP request sent to the server (metrics). */
  onHttpRequest?: (method: string) => void;
}

/** Git artifacts say which key signed them when verification is on. */
export interface GitArtifact extends Artifact {
  commit: string;
  signedBy?: SignatureCheck;
  /** Symbolic links left out of the checkout because they point outside the repository. */
  skippedLinks?: string[];
}

/** Too many small packs from many depth-1 fetches make reads slow: start the object store over past this. */
const maxPacks = 40;

/** What the server says the ref points to now. */
interface Target {
  /** Branch or tag name shown in the revision; undefined for a pinned commit. */
  name?: string;
  /** The remote ref to fetch (`refs/heads/main`, `refs/tags/v1.2.0`), undefined for a pinned commit. */
  remoteRef?: string;
  commit: string;
}

/**
 * A Git repository over HTTP(S) with isomorphic-git: resolves the ref on the
 * server (ls-remote), fetches only what is missing (shallow, one branch or
 * tag), and hands out a clean checkout per commit. A commit already checked
 * out (also by an earlier process) costs one ls-remote and no download.
 */
export class GitSource implements Source {
  readonly kind = 'git' as const;
  readonly description: string;
  readonly #url: string;
  readonly #ref: GitRef;
  readonly #path: string;
  /** A bad `path` is reported by fetch, like every other problem of the spec's content. */
  readonly #pathError: SourceError | undefined;
  readonly #options: GitSourceOptions;
  readonly #layout: CacheLayout;
  #closed = false;

  constructor(options: GitSourceOptions) {
    this.#url = checkGitUrl(options.url).toString();
    this.#ref = options.ref;
    const { path, error } = sourcePathOrError(options.path);
    this.#pathError = error;
    this.#path = path;
    this.#options = options;
    this.#layout = cacheLayout(options.cacheDir, redactUrl(this.#url), refKey(options.ref));
    this.description = `git ${redactUrl(this.#url)} ${describeRef(options.ref)}${this.#path === '.' ? '' : ` path ${this.#path}`}${options.verifier ? ' (signed commits only)' : ''}`;
  }

  async fetch(signal?: AbortSignal): Promise<GitArtifact> {
    if (this.#closed) throw new SourceError('unreachable', `${this.description}: the source is closed`);
    if (this.#pathError) throw this.#pathError;
    if (signal?.aborted) throw classifyRemoteError(signal.reason, redactUrl(this.#url), signal) ?? new SourceError('unreachable', 'aborted');
    const work = withCacheLock(this.#layout.root, () => this.#fetchLocked(signal));
    if (!signal) return work;
    // The lock stays held until `work` really ends; the caller need not wait for it.
    work.catch(() => undefined);
    return new Promise<GitArtifact>((resolve, reject) => {
      const onAbort = (): void => reject(classifyRemoteError(signal.reason, redactUrl(this.#url), signal) ?? new SourceError('unreachable', 'aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Let a running fetch finish writing before the caller removes anything.
    await withCacheLock(this.#layout.root, () => Promise.resolve());
  }

  async #fetchLocked(signal?: AbortSignal): Promise<GitArtifact> {
    const where = redactUrl(this.#url);
    const b = bounds();
    const limits = { fetchBytes: b.gitFetchBytes, blobBytes: b.gitBlobBytes, where };
    const http = gitHttpClient({ signal, dispatcher: this.#options.dispatcher, onRequest: this.#options.onHttpRequest, limits });
    const headers = await this.#authHeaders();
    try {
      await removeTemporaryCheckouts(this.#layout);
      const target = await this.#resolveTarget(http, headers);
      if (await pathExists(checkoutDir(this.#layout, target.commit))) {
        // Already checked out (here or by an earlier process): no download. The
        // commit object is still needed for the signature check.
        if (!this.#options.verifier || (await hasCommit(this.#layout.gitdir, target.commit))) return await this.#finish(target, signal);
      }
      try {
        return await this.#fetchAndCheckout(target, http, headers, signal);
      } catch (err) {
        if (err instanceof SourceError || classifyRemoteError(err, where, signal)) throw err;
        // Not the server's fault: a damaged object store (an interrupted write, a
        // full disk). Start the cache over once.
        await rm(this.#layout.gitdir, { recursive: true, force: true });
        return await this.#fetchAndCheckout(target, http, headers, signal);
      }
    } catch (err) {
      const classified = classifyRemoteError(err, where, signal);
      if (classified) throw classified;
      await rm(this.#layout.gitdir, { recursive: true, force: true }).catch(() => undefined);
      throw new SourceError(
        'unreachable',
        `${this.description}: the local Git cache failed (${safeCause(err).message}); the cache of this repository is rebuilt on the next run`,
        { cause: safeCause(err) },
      );
    }
  }

  async #authHeaders(): Promise<Record<string, string>> {
    const given = this.#options.credentials;
    let c: GitCredentials | undefined;
    try {
      c = typeof given === 'function' ? await given() : given;
    } catch (err) {
      // A missing variable or password file: the user's to fix, like a wrong password.
      if (err instanceof KupenstackError) throw new SourceError('auth', `${this.description}: ${err.message}`, { cause: err });
      throw err;
    }
    // Sent with the first request: saves the 401 round trip isomorphic-git would make.
    return c ? { Authorization: `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}` } : {};
  }

  async #verifier(): Promise<CommitVerifier | undefined> {
    const given = this.#options.verifier;
    if (typeof given !== 'function') return given;
    try {
      return await given();
    } catch (err) {
      // An unreadable or wrong key file is the user's to fix, like an unsigned commit.
      if (err instanceof KupenstackError && !(err instanceof SourceError))
        throw new SourceError('signature', `${this.description}: ${err.message}`, { cause: err });
      throw err;
    }
  }

  /** Asks the server where the ref points now (one small request; protocol v2 ls-refs). */
  async #resolveTarget(http: HttpClient, headers: Record<string, string>): Promise<Target> {
    const ref = this.#ref;
    const where = redactUrl(this.#url);
    if ('commit' in ref) return { commit: ref.commit };
    const prefix = 'branch' in ref ? `refs/heads/${ref.branch}` : 'tag' in ref ? `refs/tags/${ref.tag}` : 'refs/tags/';
    const refs = await git.listServerRefs({ http, url: this.#url, headers: { ...headers }, prefix, peelTags: true, protocolVersion: 2 });
    if ('branch' in ref) {
      const found = refs.find((r) => r.ref === prefix);
      if (!found) throw new SourceError('ref-not-found', `branch ${ref.branch} does not exist in ${where}; push it or change the ref`);
      return { name: ref.branch, remoteRef: prefix, commit: found.oid };
    }
    if ('tag' in ref) {
      const found = refs.find((r) => r.ref === prefix);
      if (!found) throw new SourceError('ref-not-found', `tag ${ref.tag} does not exist in ${where}; push it or change the ref`);
      return { name: ref.tag, remoteRef: prefix, commit: found.peeled ?? found.oid };
    }
    const tags = refs.filter((r) => r.ref.startsWith('refs/tags/') && !r.ref.endsWith('^{}'));
    const chosen = chooseSemverTag(
      tags.map((t) => t.ref.slice('refs/tags/'.length)),
      ref.semver,
    );
    if (chosen === undefined) {
      const seen = tags.slice(-5).map((t) => t.ref.slice('refs/tags/'.length));
      throw new SourceError(
        'ref-not-found',
        `no tag of ${where} matches the semver range ${ref.semver} (${tags.length === 0 ? 'the repository has no tags' : `tags include ${seen.join(', ')}`}); push a matching tag or widen the range`,
      );
    }
    const found = tags.find((t) => t.ref === `refs/tags/${chosen}`);
    if (!found) throw new SourceError('ref-not-found', `tag ${chosen} vanished while it was read from ${where}; retried on the next run`);
    return { name: chosen, remoteRef: found.ref, commit: found.peeled ?? found.oid };
  }

  async #fetchAndCheckout(target: Target, http: HttpClient, headers: Record<string, string>, signal?: AbortSignal): Promise<GitArtifact> {
    const gitdir = this.#layout.gitdir;
    await this.#prepareGitdir();
    let commit = target.commit;
    if (!(await hasCommit(gitdir, commit))) {
      if (target.remoteRef) {
        const short = target.remoteRef.replace(/^refs\/(heads|tags)\//, '');
        const result = await git.fetch({
          fs,
          http,
          gitdir,
          url: this.#url,
          headers: { ...headers },
          ref: target.remoteRef.startsWith('refs/heads/') ? `origin/${short}` : target.remoteRef,
          remoteRef: target.remoteRef,
          singleBranch: true,
          depth: 1,
          tags: false,
        });
        // The branch may have moved since ls-remote: the newer commit wins.
        if (result.fetchHead) commit = await peelToCommit(gitdir, result.fetchHead);
      } else {
        await this.#fetchCommit(commit, http, headers);
      }
      if (!(await hasCommit(gitdir, commit))) throw new Error(`commit ${commit} is missing after the fetch`);
    }
    signal?.throwIfAborted();
    return this.#finish({ ...target, commit }, signal);
  }

  /**
   * A pinned commit: ask for it by id (servers with allowReachableSHA1InWant,
   * or protocol v2 servers, accept that), otherwise fetch the history of all
   * branches and tags and look for it there.
   */
  async #fetchCommit(commit: string, http: HttpClient, headers: Record<string, string>): Promise<void> {
    const gitdir = this.#layout.gitdir;
    try {
      await git.fetch({ fs, http, gitdir, url: this.#url, headers: { ...headers }, ref: commit, remoteRef: commit, singleBranch: true, depth: 1, tags: false });
    } catch (err) {
      if (classifyRemoteError(err, redactUrl(this.#url)) && !isUnadvertisedRefError(err)) throw err;
    }
    if (await hasCommit(gitdir, commit)) return;
    // A full fetch cannot start from a shallow store; start it over.
    await rm(gitdir, { recursive: true, force: true });
    await this.#prepareGitdir();
    await git.fetch({ fs, http, gitdir, url: this.#url, headers: { ...headers }, singleBranch: false, tags: true });
    if (!(await hasCommit(gitdir, commit)))
      throw new SourceError(
        'ref-not-found',
        `commit ${commit} is not in any branch or tag of ${redactUrl(this.#url)}; check the commit id and that it was pushed`,
      );
  }

  async #prepareGitdir(): Promise<void> {
    const gitdir = this.#layout.gitdir;
    if (await pathExists(gitdir)) {
      const healthy = (await pathExists(join(gitdir, 'config'))) && (await pathExists(join(gitdir, 'objects')));
      const packs = healthy ? (await readdir(join(gitdir, 'objects', 'pack')).catch(() => [])).filter((f) => f.endsWith('.pack')).length : 0;
      if (healthy && packs <= maxPacks) {
        await repairShallow(gitdir);
        return;
      }
      await rm(gitdir, { recursive: true, force: true });
    }
    await mkdir(this.#layout.root, { recursive: true });
    // Initialised under a temporary name, so a crash never leaves a half-made store.
    const tmp = `${gitdir}.init-${process.pid}-${Date.now()}`;
    await git.init({ fs, gitdir: tmp, bare: true, defaultBranch: 'main' });
    // isomorphic-git maps fetched refs through the remote's refspecs.
    await git.addRemote({ fs, gitdir: tmp, remote: 'origin', url: redactUrl(this.#url) });
    await git.setConfig({ fs, gitdir: tmp, path: 'remote.origin.fetch', value: '+refs/tags/*:refs/tags/*', append: true });
    await rename(tmp, gitdir);
  }

  /** Verifies (when asked), checks out (unless already there), applies `path`, and keeps only the current and previous checkout. */
  async #finish(target: Target, signal?: AbortSignal): Promise<GitArtifact> {
    const revision = gitRevision(target.name, target.commit);
    const verifier = await this.#verifier();
    const signedBy = verifier ? await verifier.verifyCommit(this.#layout.gitdir, target.commit) : undefined;
    const finalDir = checkoutDir(this.#layout, target.commit);
    if (!(await pathExists(finalDir))) {
      const tmp = temporaryCheckoutDir(this.#layout, target.commit);
      await mkdir(tmp, { recursive: true });
      try {
        // Files unchanged since the current checkout are shared with it (hard links).
        const current = await currentCheckout(this.#layout);
        const previous =
          current && (await pathExists(checkoutDir(this.#layout, current))) ? { commit: current, dir: checkoutDir(this.#layout, current) } : undefined;
        const { skippedLinks } = await checkoutTree(this.#layout.gitdir, target.commit, tmp, { signal, previous });
        await writeCheckoutMeta(this.#layout, target.commit, { skippedLinks });
        await rename(tmp, finalDir);
      } catch (err) {
        await rm(tmp, { recursive: true, force: true });
        throw err;
      }
    }
    const { skippedLinks } = await readCheckoutMeta(this.#layout, target.commit);
    const dir = await resolveSourcePath(finalDir, this.#path, `${redactUrl(this.#url)} at ${revision}`);
    await promoteCheckout(this.#layout, target.commit);
    return { revision, dir, commit: target.commit, ...(signedBy ? { signedBy } : {}), ...(skippedLinks.length > 0 ? { skippedLinks } : {}) };
  }
}

async function hasCommit(gitdir: string, oid: string): Promise<boolean> {
  try {
    await git.readCommit({ fs, gitdir, oid });
    return true;
  } catch {
    return false;
  }
}

/**
 * isomorphic-git records the new shallow boundary before it downloads the
 * pack; a fetch stopped in between leaves boundaries for commits the store
 * does not have, which would mislead the next negotiation. Keep only real ones.
 */
async function repairShallow(gitdir: string): Promise<void> {
  const file = join(gitdir, 'shallow');
  let lines: string[];
  try {
    lines = (await readFile(file, 'utf8')).split('\n').filter((l) => /^[0-9a-f]{40}$/.test(l));
  } catch {
    return;
  }
  const kept: string[] = [];
  for (const oid of lines) if (await hasCommit(gitdir, oid)) kept.push(oid);
  if (kept.length !== lines.length) await writeFile(file, kept.map((l) => `${l}\n`).join(''));
}

/** An annotated tag points at a tag object; the checkout needs the commit behind it. */
async function peelToCommit(gitdir: string, oid: string): Promise<string> {
  let current = oid;
  for (let i = 0; i < 5; i++) {
    const { type } = await git.readObject({ fs, gitdir, oid: current, format: 'parsed' });
    if (type !== 'tag') return current;
    current = (await git.readTag({ fs, gitdir, oid: current })).tag.object;
  }
  return current;
}

/** The server refused a want for an id it does not advertise (upload-pack v0/v1 without allowReachableSHA1InWant). */
function isUnadvertisedRefError(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /not our ref|unadvertised|want .* not valid|upload-pack/i.test(message);
}
