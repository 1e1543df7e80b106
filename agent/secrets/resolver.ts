/**
 * Where secret values come from. Manifests and kupenstack.yaml only ever name
 * a secret; the resolver reads it when it is used, so a rotated value takes
 * effect without a restart. Standalone: environment variables and files the
 * user names (EnvFileSecretResolver). In the cluster: Kubernetes Secrets in
 * the manifest's namespace (or the agent's, for cluster-scoped kinds).
 *
 * Values never reach logs, errors, status, events or plans: errors say which
 * secret is missing, never what a value was.
 */
export interface SecretResolver {
  /**
   * The value of one key. `ref.namespace` is the manifest's namespace for
   * namespaced kinds and absent for cluster-scoped ones. Throws
   * SecretNotFoundError (naming the reference, never a value) when it is missing.
   */
  get(ref: SecretKey): Promise<string>;
  /** Every key of a Secret (a `.dockerconfigjson`, a `clouds.yaml`); same errors. */
  getAll?(ref: SecretName): Promise<Record<string, string>>;
  /** Where KupenStack writes secrets it makes (an ApplicationCredential's); absent where none can be written (plan). */
  readonly writer?: SecretWriter;
}

/** A Secret in a namespace, by name: what a writer writes. */
export interface SecretPlace {
  namespace: string;
  name: string;
}

/**
 * Writes Secrets KupenStack makes. A Secret it creates carries `owner` (a
 * label in the cluster, a file standalone), so only those are ever deleted;
 * one that existed before is written only if it opted in (see check), and
 * keeps its other keys. Values never reach errors.
 */
export interface SecretWriter {
  /** Every key now, read past any cache (a write a moment ago is seen); undefined when the Secret does not exist. */
  read(place: SecretPlace): Promise<Record<string, string> | undefined>;
  /**
   * Throws what `put` would for lack of permission, writing nothing: asked before a credential is made, so a Forbidden makes none.
   * A Secret that exists and is not `owner`'s is refused unless it opts in (whoever may mark it may write it): a manifest must not
   * make the agent write into a Secret its author could not write.
   */
  check(place: SecretPlace, owner: string): Promise<void>;
  /** Sets these keys together (a reader sees all old or all new values), creating the Secret marked as `owner`'s when missing. */
  put(place: SecretPlace, data: Record<string, string>, owner: string): Promise<void>;
  /**
   * Whether the Secret carries `owner`'s mark and no consent to be written (an operator who opted a Secret in
   * keeps it, even one KupenStack first made): only then does removeOwned delete it.
   */
  owned(place: SecretPlace, owner: string): Promise<boolean>;
  /** Deletes the Secret when it is `owned`; a Secret made by someone else, or opted in, or none, is left. */
  removeOwned(place: SecretPlace, owner: string): Promise<void>;
}

export interface SecretName {
  /** A Kubernetes Secret's name (in-cluster). */
  name?: string;
  namespace?: string;
  /** Standalone: an environment variable holding the value. */
  env?: string;
  /** Standalone: a file holding the value (trailing newline dropped). */
  file?: string;
}

export interface SecretKey extends SecretName {
  /** The key inside a Kubernetes Secret; ignored for env/file. */
  key?: string;
}

/** How a reference reads in messages: never a value. */
export function describeSecret(ref: SecretKey): string {
  if (ref.env) return `environment variable ${ref.env}`;
  if (ref.file) return `file ${ref.file}`;
  const where = ref.namespace ? `${ref.namespace}/` : '';
  return `Secret ${where}${ref.name ?? '(unnamed)'}${ref.key ? ` key ${ref.key}` : ''}`;
}
