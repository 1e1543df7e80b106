import { validRange } from 'semver';
import { SourceConfigError } from './config-error.ts';

/** What to check out: exactly one of branch, tag, semver range over tags, or a pinned commit. */
export type GitRef = { branch: string } | { tag: string } | { semver: string } | { commit: string };

const fullSha1 = /^[0-9a-f]{40}$/;
const fullSha256 = /^[0-9a-f]{64}$/;

/** Checks a ref as it comes from the configuration; throws a SourceConfigError that says how to fix it. */
export function checkGitRef(ref: Partial<Record<'branch' | 'tag' | 'semver' | 'commit', unknown>>): GitRef {
  const given = (['branch', 'tag', 'semver', 'commit'] as const).filter((k) => ref[k] !== undefined);
  if (given.length !== 1)
    throw new SourceConfigError(`the Git ref must name exactly one of branch, tag, semver or commit (got ${given.length === 0 ? 'none' : given.join(', ')})`);
  const key = given[0] ?? 'branch';
  const value = ref[key];
  if (typeof value !== 'string' || value === '') throw new SourceConfigError(`the Git ref ${key} must be a non-empty string`);
  switch (key) {
    case 'branch':
    case 'tag':
      if (!validRefName(value))
        throw new SourceConfigError(`the Git ${key} "${value}" is not a valid ref name (no spaces, "..", "~^:?*[\\", leading "-" or trailing "/" or ".lock")`);
      return key === 'branch' ? { branch: value.replace(/^refs\/heads\//, '') } : { tag: value.replace(/^refs\/tags\//, '') };
    case 'semver':
      if (validRange(value) === null) throw new SourceConfigError(`the semver range "${value}" is not valid; write it like ">=1.2.0 <2.0.0", "^1.2" or "1.x"`);
      return { semver: value };
    default:
      if (fullSha256.test(value)) throw new SourceConfigError(`the commit ${value} is a SHA-256 object name; SHA-256 repositories are not supported yet`);
      if (!fullSha1.test(value)) throw new SourceConfigError(`the commit "${value}" must be a full 40-character lowercase SHA-1 (git rev-parse <commit>)`);
      return { commit: value };
  }
}

/** git check-ref-format, the parts that matter for names a user types. */
function validRefName(name: string): boolean {
  return !(
    name.length > 255 ||
    /[\s~^:?*[\\]/.test(name) ||
    [...name].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f) ||
    name.includes('..') ||
    name.includes('@{') ||
    name.startsWith('-') ||
    name.startsWith('/') ||
    name.endsWith('/') ||
    name.endsWith('.') ||
    name.endsWith('.lock') ||
    name.includes('//') ||
    name.split('/').some((part) => part.startsWith('.'))
  );
}

/** The ref in words, for descriptions and messages. */
export function describeRef(ref: GitRef): string {
  if ('branch' in ref) return `branch ${ref.branch}`;
  if ('tag' in ref) return `tag ${ref.tag}`;
  if ('semver' in ref) return `semver ${ref.semver}`;
  return `commit ${ref.commit}`;
}

/** A stable key of the ref, for the cache layout. */
export function refKey(ref: GitRef): string {
  if ('branch' in ref) return `branch:${ref.branch}`;
  if ('tag' in ref) return `tag:${ref.tag}`;
  if ('semver' in ref) return `semver:${ref.semver}`;
  return `commit:${ref.commit}`;
}

/**
 * Flux's revision format: `<branch or tag>@sha1:<commit>`, and `sha1:<commit>`
 * for a pinned commit (there is no name to show).
 */
export function gitRevision(name: string | undefined, commit: string): string {
  return name ? `${name}@sha1:${commit}` : `sha1:${commit}`;
}
