import { OciError } from './errors.ts';

/**
 * `registry/repository[:tag][@digest]` as docker and oras read it. A first
 * component without `.`, `:` or `localhost` is a Docker Hub path.
 */
export interface Reference {
  /** host[:port] as written (docker.io for Docker Hub). */
  registry: string;
  repository: string;
  tag?: string;
  digest?: string;
}

const component = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const repositoryRe = new RegExp(`^${component}(?:/${component})*$`);
const tagRe = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const digestRe = /^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$/;
const hostRe = /^(?:\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::[0-9]{1,5})?$/;

const dockerHub = 'docker.io';

export function isValidTag(tag: string): boolean {
  return tagRe.test(tag);
}

export function isValidDigest(digest: string): boolean {
  return digestRe.test(digest);
}

export function parseReference(text: string): Reference {
  const bad = (why: string): OciError =>
    new OciError('oci.reference', `"${text}" is not an OCI reference (${why}); write registry/repository:tag or registry/repository@sha256:<64 hex>`);
  if (text.length === 0 || text.length > 2048) throw bad('empty or too long');
  if (/^[a-z]+:\/\//i.test(text)) throw bad('leave out the scheme; use --insecure for a plain-HTTP registry');
  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!digestRe.test(digest)) throw bad(`"${digest}" is not a sha256/sha512 digest`);
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.indexOf(':', lastSlash + 1);
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagRe.test(tag)) throw bad(`"${tag}" is not a valid tag`);
  }
  let registry = dockerHub;
  const slash = rest.indexOf('/');
  const first = slash >= 0 ? rest.slice(0, slash) : '';
  if (slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost' || first.startsWith('['))) {
    registry = first;
    rest = rest.slice(slash + 1);
    if (!hostRe.test(registry)) throw bad(`"${registry}" is not a host[:port]`);
  } else if (!rest.includes('/')) {
    rest = `library/${rest}`;
  }
  if (registry === 'index.docker.io' || registry === 'registry-1.docker.io') registry = dockerHub;
  if (!repositoryRe.test(rest)) throw bad(`"${rest}" is not a repository name (lowercase letters, digits, separators . _ - and /)`);
  return { registry, repository: rest, ...(tag !== undefined ? { tag } : {}), ...(digest !== undefined ? { digest } : {}) };
}

/** Splits `registry/repository` (the DiskRequest form: no tag, no digest). */
export function parseRepository(text: string): { registry: string; repository: string } {
  const ref = parseReference(text);
  if (ref.tag !== undefined || ref.digest !== undefined) {
    throw new OciError('oci.reference', `"${text}" must name a repository only (no :tag or @digest); give the tag, semver range or digest separately`);
  }
  return { registry: ref.registry, repository: ref.repository };
}

export function formatReference(ref: Reference): string {
  return `${ref.registry}/${ref.repository}${ref.tag !== undefined ? `:${ref.tag}` : ''}${ref.digest !== undefined ? `@${ref.digest}` : ''}`;
}

/**
 * How plans and logs name what a DiskRequest follows, its repository as the
 * user wrote it: `repo@sha256:…` (a pinned digest wins), `repo:tag`, or
 * `repo:<semver range>`.
 */
export function formatRequest(request: { repository: string; tag?: string | undefined; semver?: string | undefined; digest?: string | undefined }): string {
  if (request.digest) return `${request.repository}@${request.digest}`;
  return `${request.repository}:${request.semver ?? request.tag ?? 'latest'}`;
}

/**
 * A reference as a DiskRequest (`registry/repository` plus tag or digest;
 * no tag and no digest means `latest`). Docker Hub short names work:
 * `cirros:0.6` is `docker.io/library/cirros:0.6`.
 */
export function toDiskRequest(text: string): { repository: string; tag?: string; digest?: string } {
  const ref = parseReference(text);
  const repository = `${ref.registry}/${ref.repository}`;
  if (ref.digest !== undefined) return { repository, digest: ref.digest };
  return { repository, tag: ref.tag ?? 'latest' };
}

/** The host the HTTP API is served on (Docker Hub's API is not on docker.io). */
export function apiHost(registry: string): string {
  return registry === dockerHub ? 'registry-1.docker.io' : registry;
}

/** Loopback hosts: the only ones where credentials may travel over plain HTTP. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
