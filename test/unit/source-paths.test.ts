import { describe, expect, it } from 'vitest';
import { ignoredPath } from '../../agent/source/directory.ts';
import { linkStaysInside } from '../../agent/source/git-checkout.ts';
import { normalizeSourcePath } from '../../agent/source/source-path.ts';

describe('source paths', () => {
  it('normalises the Sync path and refuses ways out of the source', () => {
    expect(normalizeSourcePath(undefined)).toBe('.');
    expect(normalizeSourcePath('./')).toBe('.');
    expect(normalizeSourcePath('')).toBe('.');
    expect(normalizeSourcePath('./clusters//prod/')).toBe('clusters/prod');
    expect(() => normalizeSourcePath('../x')).toThrow(/contains "\.\."/);
    expect(() => normalizeSourcePath('a/../../x')).toThrow(/contains "\.\."/);
    expect(() => normalizeSourcePath('/etc')).toThrow(/is absolute/);
    expect(() => normalizeSourcePath('C:\\x')).toThrow(/is absolute/);
  });

  it('keeps symbolic links of a checkout only when they resolve inside the tree', () => {
    expect(linkStaysInside('current', 'clusters/prod')).toBe(true);
    expect(linkStaysInside('a/b/link', '../c')).toBe(true);
    expect(linkStaysInside('a/link', '../../x')).toBe(false);
    expect(linkStaysInside('link', '/etc/passwd')).toBe(false);
    expect(linkStaysInside('link', '')).toBe(false);
  });

  it('ignores editor temporaries, hidden files and VCS data in a watched folder', () => {
    for (const p of ['.git/index', 'a/.a.yaml.swp', 'a.yaml~', '4913', '#a.yaml#', 'x.tmp', 'net.yaml___jb_tmp___', 'node_modules/x.yaml']) expect(ignoredPath(p), p).toBe(true);
    for (const p of ['a.yaml', 'clusters/prod/net.yaml', '', 'notes.md']) expect(ignoredPath(p), p).toBe(false);
  });
});
