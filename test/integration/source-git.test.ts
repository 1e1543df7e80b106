import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { GitCredentials, resolveCredentials } from '../../agent/source/credentials.ts';
import { GitSource, type GitSourceOptions } from '../../agent/source/git.ts';
import { SourceError, type SourceFailure } from '../../agent/source/source.ts';
import { GitProxy } from '../support/git-proxy.ts';
import { TestRepo } from '../support/git-remote.ts';
import { peers } from '../support/peers.ts';

// Every test talks to the test bed's real Git server (nginx + git http-backend),
// pushes with the real git CLI, and checks what the source hands out against
// what the server says (ls-remote) and what the files contain.

const credentials = new GitCredentials(peers.git.user, peers.git.password);
const cleanup: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

async function newCache(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ks-git-cache-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function newRepo(prefix: string): Promise<TestRepo> {
  const repo = await TestRepo.create(prefix);
  cleanup.push(() => repo.dispose());
  return repo;
}

function source(repo: TestRepo, cacheDir: string, options: Partial<GitSourceOptions> = {}): GitSource {
  return new GitSource({ url: repo.url, ref: { branch: 'main' }, credentials, cacheDir, ...options });
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

function expectFailure(err: SourceError, kind: SourceFailure, message: RegExp): void {
  expect(err.failure).toBe(kind);
  expect(err.code).toBe(`source.${kind}`);
  expect(err.message).toMatch(message);
}

describe('Git source: following a branch', () => {
  it('checks out the branch head, then each new pushed commit, with Flux-style revisions', async () => {
    const repo = await newRepo('src-branch');
    await repo.commit({ 'clusters/prod/network.yaml': 'kind: Network\nmetadata: {name: a}\n', 'README.md': '# infra\n' });
    repo.push();
    const src = source(repo, await newCache());

    const first = await src.fetch();
    const head1 = repo.remoteRef('refs/heads/main');
    expect(first.revision).toBe(`main@sha1:${head1}`);
    expect(first.commit).toBe(head1);
    expect(await readFile(join(first.dir, 'clusters/prod/network.yaml'), 'utf8')).toBe('kind: Network\nmetadata: {name: a}\n');

    await repo.commit({ 'clusters/prod/network.yaml': 'kind: Network\nmetadata: {name: b}\n', 'clusters/prod/subnet.yaml': 'kind: Subnet\n' });
    repo.push();
    const second = await src.fetch();
    const head2 = repo.remoteRef('refs/heads/main');
    expect(head2).not.toBe(head1);
    expect(second.revision).toBe(`main@sha1:${head2}`);
    expect(await readFile(join(second.dir, 'clusters/prod/network.yaml'), 'utf8')).toBe('kind: Network\nmetadata: {name: b}\n');
    expect((await readdir(join(second.dir, 'clusters/prod'))).sort()).toEqual(['network.yaml', 'subnet.yaml']);
    // The previous checkout is untouched: a consumer still reading it is not disturbed.
    expect(await readFile(join(first.dir, 'clusters/prod/network.yaml'), 'utf8')).toBe('kind: Network\nmetadata: {name: a}\n');
    expect(src.description).toBe(`git ${repo.url} branch main`);
  });

  it('keeps only the current and the previous checkout', async () => {
    const repo = await newRepo('src-prune');
    const src = source(repo, await newCache());
    const dirs: string[] = [];
    for (let i = 0; i < 4; i++) {
      await repo.commit({ 'a.yaml': `n: ${i}\n` });
      repo.push();
      dirs.push((await src.fetch()).dir);
    }
    const exists = await Promise.all(dirs.map((d) => stat(d).then(() => true, () => false)));
    expect(exists).toEqual([false, false, true, true]);
  });

  it('takes a force-pushed branch whose new head does not descend from the old one', async () => {
    const repo = await newRepo('src-force');
    const base = await repo.commit({ 'a.yaml': 'v: 1\n' });
    await repo.commit({ 'a.yaml': 'v: 2\n' });
    repo.push();
    const src = source(repo, await newCache());
    expect((await src.fetch()).revision).toBe(`main@sha1:${repo.head()}`);

    repo.git('reset', '-q', '--hard', base);
    const rewritten = await repo.commit({ 'b.yaml': 'rewritten: true\n' }, 'rewrite history');
    repo.git('push', '-q', '--force', repo.url, 'main');
    expect(repo.remoteRef('refs/heads/main')).toBe(rewritten);

    const after = await src.fetch();
    expect(after.revision).toBe(`main@sha1:${rewritten}`);
    expect((await readdir(after.dir)).sort()).toEqual(['a.yaml', 'b.yaml']);
    expect(await readFile(join(after.dir, 'a.yaml'), 'utf8')).toBe('v: 1\n');
  });

  it('reports a deleted branch as ref-not-found and recovers when it is pushed again, without a new source', async () => {
    const repo = await newRepo('src-deleted');
    const commit = await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.push('main', 'main:release');
    const src = source(repo, await newCache(), { ref: { branch: 'release' } });
    expect((await src.fetch()).revision).toBe(`release@sha1:${commit}`);

    repo.git('push', '-q', repo.url, ':release');
    expect(repo.remoteRef('refs/heads/release')).toBeUndefined();
    expectFailure(await failure(src.fetch()), 'ref-not-found', /branch release does not exist/);

    const again = await repo.commit({ 'a.yaml': 'a: 2\n' });
    repo.push('main:release');
    const recovered = await src.fetch();
    expect(recovered.revision).toBe(`release@sha1:${again}`);
    expect(await readFile(join(recovered.dir, 'a.yaml'), 'utf8')).toBe('a: 2\n');
  });
});

describe('Git source: tags, semver ranges and pinned commits', () => {
  it('checks out a lightweight and an annotated tag at their commits', async () => {
    const repo = await newRepo('src-tag');
    const c1 = await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.git('tag', 'light');
    const c2 = await repo.commit({ 'a.yaml': 'a: 2\n' });
    repo.git('tag', '-a', 'v2.0.0', '-m', 'release 2');
    await repo.commit({ 'a.yaml': 'a: 3\n' });
    repo.push('main', '--tags');
    const cache = await newCache();

    const light = await source(repo, cache, { ref: { tag: 'light' } }).fetch();
    expect(light.revision).toBe(`light@sha1:${c1}`);
    expect(await readFile(join(light.dir, 'a.yaml'), 'utf8')).toBe('a: 1\n');
    const annotated = await source(repo, cache, { ref: { tag: 'v2.0.0' } }).fetch();
    // The revision names the commit, not the tag object.
    expect(annotated.revision).toBe(`v2.0.0@sha1:${c2}`);
    expect(await readFile(join(annotated.dir, 'a.yaml'), 'utf8')).toBe('a: 2\n');

    expectFailure(await failure(source(repo, cache, { ref: { tag: 'v9' } }).fetch()), 'ref-not-found', /tag v9 does not exist/);

    // A tag moved on the server (git tag -f; git push -f) is followed.
    const src = source(repo, cache, { ref: { tag: 'light' } });
    expect((await src.fetch()).commit).toBe(c1);
    const moved = await repo.commit({ 'a.yaml': 'a: 4\n' });
    repo.git('tag', '-f', 'light');
    repo.git('push', '-q', '--force', repo.url, 'refs/tags/light');
    expect(repo.remoteRef('refs/tags/light')).toBe(moved);
    const after = await src.fetch();
    expect(after.revision).toBe(`light@sha1:${moved}`);
    expect(await readFile(join(after.dir, 'a.yaml'), 'utf8')).toBe('a: 4\n');
  });

  it('follows the highest tag in a semver range and moves when a higher one is pushed', async () => {
    const repo = await newRepo('src-semver');
    const tag = async (name: string, content: string): Promise<string> => {
      const c = await repo.commit({ 'version.yaml': content });
      repo.git('tag', name);
      return c;
    };
    await tag('v1.0.0', 'v: 1.0.0\n');
    const c12 = await tag('v1.2.0', 'v: 1.2.0\n');
    await tag('v1.10.0-rc.1', 'v: rc\n'); // a pre-release is not in ^1.0.0
    await tag('v2.0.0', 'v: 2.0.0\n'); // out of range
    await tag('not-a-version', 'v: x\n');
    repo.push('main', '--tags');
    const src = source(repo, await newCache(), { ref: { semver: '^1.0.0' } });

    const first = await src.fetch();
    expect(first.revision).toBe(`v1.2.0@sha1:${c12}`);
    expect(await readFile(join(first.dir, 'version.yaml'), 'utf8')).toBe('v: 1.2.0\n');

    const c110 = await tag('v1.10.0', 'v: 1.10.0\n');
    repo.push('main', '--tags');
    const second = await src.fetch();
    expect(second.revision).toBe(`v1.10.0@sha1:${c110}`);
    expect(await readFile(join(second.dir, 'version.yaml'), 'utf8')).toBe('v: 1.10.0\n');

    const none = await failure(source(repo, await newCache(), { ref: { semver: '>=3.0.0' } }).fetch());
    expectFailure(none, 'ref-not-found', /no tag .* matches the semver range >=3\.0\.0/);
  });

  it('checks out a pinned commit that is neither a branch head nor tagged, from an empty cache', async () => {
    const repo = await newRepo('src-commit');
    const old = await repo.commit({ 'a.yaml': 'a: old\n' });
    await repo.commit({ 'a.yaml': 'a: new\n' });
    repo.git('checkout', '-q', '-b', 'side', old);
    const onSide = await repo.commit({ 'side.yaml': 's: 1\n' });
    await repo.commit({ 'side.yaml': 's: 2\n' });
    repo.git('checkout', '-q', 'main');
    repo.push('main', 'side');

    const pinnedOld = await source(repo, await newCache(), { ref: { commit: old } }).fetch();
    expect(pinnedOld.revision).toBe(`sha1:${old}`);
    expect(await readFile(join(pinnedOld.dir, 'a.yaml'), 'utf8')).toBe('a: old\n');
    const pinnedSide = await source(repo, await newCache(), { ref: { commit: onSide } }).fetch();
    expect(pinnedSide.commit).toBe(onSide);
    expect(await readFile(join(pinnedSide.dir, 'side.yaml'), 'utf8')).toBe('s: 1\n');

    const unknown = 'c0ffee'.padEnd(40, '0');
    expectFailure(await failure(source(repo, await newCache(), { ref: { commit: unknown } }).fetch()), 'ref-not-found', new RegExp(`commit ${unknown} is not in any branch or tag`));
  });
});

describe('Git source: path inside the repository', () => {
  it('hands out the folder named by path, and refuses paths that are missing or leave the repository', async () => {
    const repo = await newRepo('src-path');
    // Three symbolic links: one inside the repository, one to the agent's file
    // system, and one that only escapes through another link.
    await repo.symlink('current', 'clusters/prod');
    await repo.symlink('escape', '../../../../../etc');
    await repo.symlink('here', '.');
    await repo.symlink('sneaky', 'here/../../../etc');
    await repo.commit({ 'clusters/prod/net.yaml': 'kind: Network\n', 'clusters/dev/net.yaml': 'kind: Network\n' });
    repo.push();
    const cache = await newCache();

    const prod = await source(repo, cache, { path: './clusters/prod/' }).fetch();
    expect(await readdir(prod.dir)).toEqual(['net.yaml']);
    expect(prod.dir.endsWith(join('clusters', 'prod'))).toBe(true);
    const viaLink = await source(repo, cache, { path: 'current' }).fetch();
    expect(await readdir(viaLink.dir)).toEqual(['net.yaml']);

    expectFailure(await failure(source(repo, cache, { path: 'clusters/staging' }).fetch()), 'path', /path "clusters\/staging" does not exist/);
    expectFailure(await failure(source(repo, cache, { path: '../other-repo' }).fetch()), 'path', /contains "\.\."/);
    expectFailure(await failure(source(repo, cache, { path: '/etc' }).fetch()), 'path', /is absolute/);
    // The escaping link is not written at all, so the path through it does not exist.
    expectFailure(await failure(source(repo, cache, { path: 'escape' }).fetch()), 'path', /path "escape" does not exist/);
    const root = await source(repo, cache).fetch();
    expect((await readdir(root.dir)).sort()).toEqual(['clusters', 'current', 'here']);
    expect(root.skippedLinks?.sort()).toEqual(['escape', 'sneaky']);
  });
});

describe('Git source: credentials and an unreachable server', () => {
  it('reports wrong credentials as auth, with no secret in the message, stack, cause or description', async () => {
    const repo = await newRepo('src-auth');
    await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.push();
    const secret = 'not-the-password-7f3a9c';
    const src = source(repo, await newCache(), { credentials: new GitCredentials(peers.git.user, secret) });
    const err = await failure(src.fetch());
    expectFailure(err, 'auth', /refused the credentials .*HTTP 401/);
    const everything = [err.message, err.stack ?? '', JSON.stringify(err), inspect(err, { depth: 10 }), String(err.cause), inspect(err.cause, { depth: 10 }), src.description, inspect(src)].join('\n');
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain(Buffer.from(`${peers.git.user}:${secret}`).toString('base64'));

    const anonymous = await failure(source(repo, await newCache(), { credentials: undefined }).fetch());
    expectFailure(anonymous, 'auth', /HTTP 401/);
  });

  it('reads credentials again before every fetch when given a provider: a fixed password works without a new source', async () => {
    const repo = await newRepo('src-rotate');
    const commit = await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.push();
    const env: NodeJS.ProcessEnv = { GIT_PASSWORD: 'wrong-password-1b2c' };
    const src = source(repo, await newCache(), { credentials: () => resolveCredentials({ username: peers.git.user, passwordEnv: 'GIT_PASSWORD' }, env) });
    const wrong = await failure(src.fetch());
    expectFailure(wrong, 'auth', /HTTP 401/);
    expect(inspect(wrong, { depth: 10 })).not.toContain('wrong-password-1b2c');

    delete env.GIT_PASSWORD;
    expectFailure(await failure(src.fetch()), 'auth', /environment variable GIT_PASSWORD, which is not set/);

    env.GIT_PASSWORD = peers.git.password;
    expect((await src.fetch()).revision).toBe(`main@sha1:${commit}`);
  });

  it('reports a server that is gone as unreachable and recovers when it is back, on the same source object', async () => {
    const repo = await newRepo('src-down');
    await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.push();
    const proxy = new GitProxy(peers.git.url);
    await proxy.start();
    cleanup.push(() => proxy.stop());
    const url = repo.url.replace(peers.git.url, proxy.url);
    const src = new GitSource({ url, ref: { branch: 'main' }, credentials, cacheDir: await newCache() });
    expect((await src.fetch()).revision).toBe(`main@sha1:${repo.head()}`);

    await proxy.stop();
    const down = await failure(src.fetch());
    expectFailure(down, 'unreachable', /cannot reach the Git server .*ECONNREFUSED/);

    const next = await repo.commit({ 'a.yaml': 'a: 2\n' });
    repo.push();
    await proxy.start(); // same port
    const back = await src.fetch();
    expect(back.revision).toBe(`main@sha1:${next}`);
    expect(await readFile(join(back.dir, 'a.yaml'), 'utf8')).toBe('a: 2\n');
  });
});

describe('Git source: the cache', () => {
  it('survives a new source instance: an unchanged branch costs one ref listing and no download', async () => {
    const repo = await newRepo('src-cache');
    await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.push();
    const proxy = new GitProxy(peers.git.url);
    await proxy.start();
    cleanup.push(() => proxy.stop());
    const url = repo.url.replace(peers.git.url, proxy.url);
    const cacheDir = await newCache();

    const first = await new GitSource({ url, ref: { branch: 'main' }, credentials, cacheDir }).fetch();
    const cold = proxy.requests.length;
    const checkedOutAt = (await stat(first.dir)).mtimeMs;
    proxy.requests = [];

    // A new instance, as after a restart of the agent.
    const second = await new GitSource({ url, ref: { branch: 'main' }, credentials, cacheDir }).fetch();
    expect(second.revision).toBe(first.revision);
    expect(second.dir).toBe(first.dir);
    expect((await stat(second.dir)).mtimeMs).toBe(checkedOutAt);
    // Only ls-remote (protocol v2: GET info/refs, POST ls-refs); no pack negotiation.
    expect(proxy.requests.map((r) => `${r.method} ${r.path.replace(/^.*\.git/, '')}`)).toEqual(['GET /info/refs?service=git-upload-pack', 'POST /git-upload-pack']);
    expect(cold).toBeGreaterThan(proxy.requests.length);
  });

  it('a fetch stopped by its signal leaves nothing half-written, and the next fetch is complete', async () => {
    const repo = await newRepo('src-abort');
    await repo.commit({ 'a.yaml': 'a: 1\n', 'b/c.yaml': 'c: 1\n' });
    repo.push();
    const proxy = new GitProxy(peers.git.url);
    await proxy.start();
    cleanup.push(() => proxy.stop());
    const cacheDir = await newCache();
    const src = new GitSource({ url: repo.url.replace(peers.git.url, proxy.url), ref: { branch: 'main' }, credentials, cacheDir });

    proxy.postDelayMs = 3_000;
    const started = Date.now();
    const stopped = await failure(src.fetch(AbortSignal.timeout(300)));
    expectFailure(stopped, 'unreachable', /stopped before it finished \(timed out\)/);
    expect(Date.now() - started).toBeLessThan(2_500);

    proxy.postDelayMs = 0;
    const after = await src.fetch();
    expect(after.revision).toBe(`main@sha1:${repo.head()}`);
    expect(await readFile(join(after.dir, 'b/c.yaml'), 'utf8')).toBe('c: 1\n');
    const leftovers = (await readdir(join(after.dir, '..'))).filter((e) => e.startsWith('.tmp'));
    expect(leftovers).toEqual([]);
  });

  it('serves several sources of one repository fetching at the same time from one cache', async () => {
    const repo = await newRepo('src-shared');
    const c1 = await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.push('main', 'main:release');
    const c2 = await repo.commit({ 'a.yaml': 'a: 2\n' });
    repo.git('tag', 'v1.0.0');
    repo.push('main', '--tags');
    const cacheDir = await newCache();
    const sources = [source(repo, cacheDir), source(repo, cacheDir, { ref: { branch: 'release' } }), source(repo, cacheDir, { ref: { semver: '1.x' } }), source(repo, cacheDir, { ref: { commit: c1 } })];
    const artifacts = await Promise.all(sources.map((s) => s.fetch()));
    expect(artifacts.map((a) => a.revision)).toEqual([`main@sha1:${c2}`, `release@sha1:${c1}`, `v1.0.0@sha1:${c2}`, `sha1:${c1}`]);
    const contents = await Promise.all(artifacts.map((a) => readFile(join(a.dir, 'a.yaml'), 'utf8')));
    expect(contents).toEqual(['a: 2\n', 'a: 1\n', 'a: 2\n', 'a: 1\n']);
    // One object store for the repository, one checkout folder per ref.
    const [urlDir] = await readdir(cacheDir);
    expect((await readdir(join(cacheDir, urlDir ?? ''))).filter((e) => e.startsWith('ref-')).length).toBe(4);
  });

  it('starts the cache over when its object store is damaged', async () => {
    const repo = await newRepo('src-corrupt');
    await repo.commit({ 'a.yaml': 'a: 1\n' });
    repo.push();
    const cacheDir = await newCache();
    const src = source(repo, cacheDir);
    await src.fetch();
    // Damage every pack and index in the cache (a full disk, a crash mid-write).
    const [urlDir] = await readdir(cacheDir);
    const packDir = join(cacheDir, urlDir ?? '', 'repo.git', 'objects', 'pack');
    const packs = await readdir(packDir);
    expect(packs.length).toBeGreaterThan(0);
    for (const f of packs) await writeFile(join(packDir, f), 'garbage');

    const next = await repo.commit({ 'a.yaml': 'a: 2\n' });
    repo.push();
    const after = await source(repo, cacheDir).fetch();
    expect(after.revision).toBe(`main@sha1:${next}`);
    expect(await readFile(join(after.dir, 'a.yaml'), 'utf8')).toBe('a: 2\n');
  });
});
