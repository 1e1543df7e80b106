import { describe, expect, it } from 'vitest';
import { SourceConfigError } from '../../agent/source/config-error.ts';
import { checkGitRef, describeRef, gitRevision, refKey } from '../../agent/source/git-ref.ts';
import { chooseSemverTag } from '../../lib/semver-tag.ts';

describe('Git refs', () => {
  it('accepts exactly one of branch, tag, semver or commit', () => {
    expect(checkGitRef({ branch: 'main' })).toEqual({ branch: 'main' });
    expect(checkGitRef({ branch: 'refs/heads/release/1.x' })).toEqual({ branch: 'release/1.x' });
    expect(checkGitRef({ tag: 'refs/tags/v1.2.0' })).toEqual({ tag: 'v1.2.0' });
    expect(checkGitRef({ semver: '>=1.2.0 <2' })).toEqual({ semver: '>=1.2.0 <2' });
    const sha = 'a'.repeat(40);
    expect(checkGitRef({ commit: sha })).toEqual({ commit: sha });
    expect(() => checkGitRef({})).toThrow(/exactly one of branch, tag, semver or commit \(got none\)/);
    expect(() => checkGitRef({ branch: 'main', tag: 'v1' })).toThrow(/got branch, tag/);
  });

  it('refuses names git refuses, bad ranges and short or SHA-256 commits with a fix', () => {
    for (const bad of ['has space', 'a..b', 'x~1', 'ends/', 'x.lock', '-flag', '.hidden', 'a//b', 'tab\there']) {
      expect(() => checkGitRef({ branch: bad }), bad).toThrow(SourceConfigError);
    }
    expect(() => checkGitRef({ semver: 'not a range!' })).toThrow(/semver range "not a range!" is not valid/);
    expect(() => checkGitRef({ commit: 'abc123' })).toThrow(/full 40-character/);
    expect(() => checkGitRef({ commit: 'A'.repeat(40) })).toThrow(/lowercase/);
    expect(() => checkGitRef({ commit: 'b'.repeat(64) })).toThrow(/SHA-256 repositories are not supported/);
  });

  it('writes revisions the way Flux does', () => {
    const sha = '4f2a'.padEnd(40, '0');
    expect(gitRevision('main', sha)).toBe(`main@sha1:${sha}`);
    expect(gitRevision('v1.2.0', sha)).toBe(`v1.2.0@sha1:${sha}`);
    expect(gitRevision(undefined, sha)).toBe(`sha1:${sha}`);
    expect(describeRef({ semver: '^1' })).toBe('semver ^1');
    expect(refKey({ branch: 'main' })).not.toBe(refKey({ tag: 'main' }));
  });
});

describe('semver choice over tags', () => {
  const tags = ['v1.0.0', 'v1.2.0', 'v1.10.0', 'v2.0.0', 'v1.11.0-rc.1', 'latest', 'release-3', '1.3.0'];

  it('takes the highest version in the range, numerically (1.10 > 1.2)', () => {
    expect(chooseSemverTag(tags, '^1.0.0')).toBe('v1.10.0');
    expect(chooseSemverTag(tags, '~1.2')).toBe('v1.2.0');
    expect(chooseSemverTag(tags, '>=1.0.0 <1.5.0')).toBe('1.3.0');
    expect(chooseSemverTag(tags, '*')).toBe('v2.0.0');
  });

  it('leaves pre-releases out unless the range asks for them, and ignores non-version tags', () => {
    expect(chooseSemverTag(tags, '>=1.11.0-rc.0 <2')).toBe('v1.11.0-rc.1');
    expect(chooseSemverTag(['latest', 'stable'], '*')).toBeUndefined();
    expect(chooseSemverTag(tags, '>=3')).toBeUndefined();
  });

  it('picks one tag deterministically when two name the same version', () => {
    expect(chooseSemverTag(['v1.0.0', '1.0.0'], '1.x')).toBe('1.0.0');
    expect(chooseSemverTag(['1.0.0', 'v1.0.0'], '1.x')).toBe('1.0.0');
  });
});
