import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirectorySource } from '../../agent/source/directory.ts';
import { SourceError } from '../../agent/source/source.ts';

// A real folder and the real file watcher (chokidar on inotify): what a
// developer does when they edit manifests next to a running agent.

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function folder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ks-dir-src-'));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return dir;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until `check` holds (polling), or fails after `ms`. */
async function eventually(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(25);
  }
}

describe('Directory source', () => {
  it('names a revision by the manifests content: edits change it, ignored files and unchanged saves do not', async () => {
    const dir = await folder({ 'net.yaml': 'kind: Network\n', 'sub/vm.yaml': 'kind: VirtualMachine\n', 'README.md': '# notes\n' });
    const src = new DirectorySource({ directory: dir });
    const first = await src.fetch();
    expect(first.revision).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(first.dir).toBe(dir);
    expect((await src.fetch()).revision).toBe(first.revision);

    // Not manifests, or ignored by the loader: same revision.
    await writeFile(join(dir, 'README.md'), '# other notes\n');
    await writeFile(join(dir, '.hidden.yaml'), 'kind: Network\n');
    await writeFile(join(dir, 'net.yaml'), 'kind: Network\n'); // saved, unchanged
    expect((await src.fetch()).revision).toBe(first.revision);

    await writeFile(join(dir, 'net.yaml'), 'kind: Network\nmetadata: {name: b}\n');
    const edited = await src.fetch();
    expect(edited.revision).not.toBe(first.revision);
    await writeFile(join(dir, 'sub/subnet.yaml'), 'kind: Subnet\n');
    const added = await src.fetch();
    expect(added.revision).not.toBe(edited.revision);
    // Back to the same content: back to the same revision.
    await unlink(join(dir, 'sub/subnet.yaml'));
    await writeFile(join(dir, 'net.yaml'), 'kind: Network\n');
    expect((await src.fetch()).revision).toBe(first.revision);
  });

  it('applies path and refuses a missing folder, a missing path and one that leaves the folder', async () => {
    const dir = await folder({ 'clusters/prod/net.yaml': 'kind: Network\n' });
    const prod = await new DirectorySource({ directory: dir, path: './clusters/prod' }).fetch();
    expect(prod.dir).toBe(join(dir, 'clusters/prod'));
    const failure = async (src: DirectorySource): Promise<SourceError> => {
      const err: unknown = await src.fetch().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(SourceError);
      return err as SourceError;
    };
    expect((await failure(new DirectorySource({ directory: dir, path: 'clusters/dev' }))).message).toMatch(/path "clusters\/dev" does not exist/);
    expect((await failure(new DirectorySource({ directory: dir, path: '../x' }))).failure).toBe('path');
    expect((await failure(new DirectorySource({ directory: join(dir, 'nope') }))).message).toMatch(/does not exist or is not a folder/);
  });

  it('watch fires once per burst of edits, ignores editor temporaries and .git, and stops when asked', async () => {
    const dir = await folder({ 'a.yaml': 'a: 0\n', '.git/HEAD': 'ref: refs/heads/main\n' });
    const src = new DirectorySource({ directory: dir, debounceMs: 300 });
    let calls = 0;
    const stop = src.watch(() => calls++);
    await src.whenWatching();

    // A burst: twenty files written in quick succession (a git checkout, a generator).
    await Promise.all(Array.from({ length: 20 }, (_, i) => writeFile(join(dir, `f${i}.yaml`), `n: ${i}\n`)));
    await eventually(() => calls === 1);
    await sleep(800);
    expect(calls).toBe(1);

    // Editor temporaries and VCS data: nothing.
    await writeFile(join(dir, '.a.yaml.swp'), 'x');
    await writeFile(join(dir, 'a.yaml~'), 'x');
    await writeFile(join(dir, '4913'), 'x');
    await writeFile(join(dir, '#a.yaml#'), 'x');
    await writeFile(join(dir, '.git', 'index'), 'x');
    await sleep(800);
    expect(calls).toBe(1);

    // One real edit: one more call.
    await writeFile(join(dir, 'a.yaml'), 'a: 1\n');
    await eventually(() => calls === 2);
    await sleep(600);
    expect(calls).toBe(2);

    stop();
    await sleep(100);
    await writeFile(join(dir, 'a.yaml'), 'a: 2\n');
    await sleep(800);
    expect(calls).toBe(2);
    await src.close();
  });
});
