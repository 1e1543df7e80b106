import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The import half of `npm run lint` (package.json "lint:cycles"), run with the
// project's own rules over small fixtures: one with a file cycle, one with a
// folder cycle only, one without any; then one planted import per layer rule
// (the front ends' pair, cli/ on top, the in-cluster loops' sub-folders), and a
// layered tree that passes; then imports past a kind's one face, and a tree that
// uses only the faces.
const root = join(import.meta.dirname, '..', '..');
const fixtures = 'test/unit/import-cycles';

function depcruise(dir: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [join(root, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs'), '--config', '.dependency-cruiser.js', join(fixtures, dir)], { cwd: root, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('npm run lint refuses import cycles', () => {
  it('fails on two files that import each other', () => {
    const r = depcruise('file-cycle');
    expect(r.status, r.out).not.toBe(0);
    expect(r.out).toContain('no-file-cycle');
    expect(r.out).toMatch(/file-cycle\/a\.ts →\s+\S*file-cycle\/b\.ts →\s+\S*file-cycle\/a\.ts/);
  });

  it('fails on two folders that import each other with no file cycle', () => {
    const r = depcruise('folder-cycle');
    expect(r.status, r.out).not.toBe(0);
    expect(r.out).toContain('no-folder-cycle');
    expect(r.out).not.toContain('no-file-cycle');
    expect(r.out).toMatch(/folder-cycle\/(one|two) →\s+\S*folder-cycle\/(one|two) →/);
  });

  it('passes when imports run one way', () => {
    const r = depcruise('acyclic');
    expect(r.out).not.toContain('error');
    expect(r.status, r.out).toBe(0);
  });
});

describe('npm run lint keeps the floors of the house (layer rules)', () => {
  const planted: [string, string, RegExp][] = [
    ['peers', 'front-ends-are-peers', /agent\/controller\/syncs\/hooks\.ts → \S*agent\/standalone\/agent\.ts/],
    ['peers-back', 'front-ends-are-peers', /agent\/standalone\/server\.ts → \S*agent\/controller\/resources\/controller\.ts/],
    ['cli-up', 'cli-on-top', /agent\/controller\/process\.ts → \S*agent\/cli\/main\.ts/],
    ['kinds-up', 'engine-below-front-ends', /agent\/kinds\/image\.ts → \S*agent\/controller\/syncs\/sync-loop\.ts/],
    ['sync-up', 'engine-below-front-ends', /agent\/sync\/sync-run\.ts → \S*agent\/standalone\/sync-runner\.ts/],
    ['engine-sync', 'engine-below-sync-kit', /agent\/act\/apply\.ts → \S*agent\/sync\/status\.ts/],
    ['engine-notify', 'engine-below-sync-kit', /agent\/act\/apply\.ts → \S*agent\/notify\/notifier\.ts/],
    ['engine-via-config', 'engine-below-sync-kit', /agent\/act\/apply\.ts → \S*agent\/notify\/target\.ts\s+\S*agent\/config\/config\.ts →/],
    ['door', 'engine-door-takes-data', /agent\/act\/apply\.ts → \S*agent\/load\/load\.ts/],
    ['syncs-alone', 'in-cluster-loops-stand-alone', /agent\/controller\/syncs\/sync-loop\.ts → \S*agent\/controller\/resources\/objects\.ts/],
    ['leases-alone', 'in-cluster-loops-stand-alone', /agent\/controller\/leases\/leader\.ts → \S*agent\/controller\/options\.ts/],
    ['resources-clouds', 'resources-below-clouds', /agent\/controller\/resources\/controller\.ts → \S*agent\/controller\/clouds\/cloud-loop\.ts/],
    ['clouds-loop', 'clouds-borrow-the-kit-not-the-loop', /agent\/controller\/clouds\/cloud-loop\.ts → \S*agent\/controller\/resources\/namespace-run\.ts/],
    ['process-up', 'in-cluster-process-on-top', /agent\/controller\/resources\/namespace-run\.ts → \S*agent\/controller\/process\.ts/],
    ['cli-cluster', 'cli-cluster-reads-syncs', /agent\/cli\/cluster\/sync-client\.ts → \S*agent\/controller\/resources\/status-store\.ts/],
  ];
  for (const [dir, rule, edge] of planted) {
    it(`fails on a planted ${dir} import (${rule})`, () => {
      const r = depcruise(`layers/${dir}`);
      expect(r.status, r.out).not.toBe(0);
      expect(r.out).toContain(rule);
      expect(r.out).toMatch(edge);
    });
  }

  it('passes a tree whose front ends stand side by side over the Sync kit and the engine, the in-cluster one a sub-folder per loop', () => {
    const r = depcruise('layers/layered');
    expect(r.out).not.toContain('error');
    expect(r.status, r.out).toBe(0);
  });
});

describe("npm run lint keeps each kind behind its one face (kinds/<kind>/index.ts)", () => {
  const planted: [string, RegExp][] = [
    ['inside', /agent\/standalone\/agent\.ts → \S*agent\/kinds\/image\/oci-follow\.ts/],
    ['kind-to-kind', /agent\/kinds\/port\/export\.ts → \S*agent\/kinds\/securitygroup\/export\.ts/],
    ['kit-to-kind', /agent\/kinds\/kit\/adapter\.ts → \S*agent\/kinds\/image\/memory\.ts/],
  ];
  for (const [dir, edge] of planted) {
    it(`fails on a planted import past a kind's face (${dir})`, () => {
      const r = depcruise(`faces/${dir}`);
      expect(r.status, r.out).not.toBe(0);
      expect(r.out).toContain('one-face-per-kind');
      expect(r.out).toMatch(edge);
    });
  }

  it("passes a tree that imports kinds through their index.ts, the kit and the registry, and a kind's own files from inside it", () => {
    const r = depcruise('faces/faced');
    expect(r.out).not.toContain('error');
    expect(r.status, r.out).toBe(0);
  });
});
