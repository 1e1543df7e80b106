import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';

/**
 * The secret tee (test/support/secret-tee.ts) walks the run's TMPDIR after each test. Two links
 * to `.` made that walk 2^40 paths deep with stat (it follows links): the run hung after this test
 * and no timeout could stop it (the walk is synchronous). With lstat it ends at once.
 */
const dir = mkdtempSync(join(tmpdir(), 'ks-links-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('leaves two links to its own folder for the after-each walk', () => {
  symlinkSync('.', join(dir, 'a'));
  symlinkSync('.', join(dir, 'b'));
  expect(readdirSync(dir).sort()).toEqual(['a', 'b']);
});
