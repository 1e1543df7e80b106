import { KupenstackError } from '../errors.ts';

/**
 * The contract between fetching a source and applying it (Flux's split):
 * a Source hands out a directory of manifests at a named revision and
 * knows nothing about OpenStack.
 */

export interface Artifact {
  /** `<ref>@sha1:<sha>` for Git (e.g. `main@sha1:4f2a…`), `<tag>@sha256:<manifest digest>` for OCI, `sha256:<content hash>` for a directory. */
  revision: string;
  /** Absolute path of the manifests root (the Sync's `path` already applied); read-only for consumers. */
  dir: string;
  /** Git only: the commit that was checked out. */
  commit?: string;
}

export type SourceFailure =
  /** The server cannot be reached (DNS, connection refused, timeout, 5xx). Transient. */
  | 'unreachable'
  /** 401/403 or bad credentials. Fix the credentials. */
  | 'auth'
  /** The branch/tag is gone, or no tag matches the semver range, or the commit is unknown. */
  | 'ref-not-found'
  /** Signed-commit mode: unsigned commit or unknown key; OCI: no cosign signature by the trusted key over the digest. */
  | 'signature'
  /** `path` missing or escaping the repository. */
  | 'path'
  /** An OCI artifact that is not a manifests artifact, or whose content is unsafe (absolute names, `..`, links out, too large). */
  | 'artifact'
  /** Over a cluster admin's bound (util/bounds.ts): a Git fetch's bytes or one of its files. */
  | 'bound';

export class SourceError extends KupenstackError {
  readonly failure: SourceFailure;
  constructor(failure: SourceFailure, message: string, options?: { cause?: unknown }) {
    super(`source.${failure}`, message, options);
    this.failure = failure;
  }
}

export interface Source {
  readonly kind: 'git' | 'oci' | 'directory';
  /** A safe description for logs and status: URL without credentials, ref, path. */
  readonly description: string;
  /** Brings the source up to date and returns what is there now. */
  fetch(signal?: AbortSignal): Promise<Artifact>;
  /** Calls `onChange` when the source probably changed (directory watch); returns a stop function. Git sources need not implement it. */
  watch?(onChange: () => void): () => void;
  close(): Promise<void>;
}
