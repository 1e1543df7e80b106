import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KupenstackError } from '../errors.ts';
import { DirSecretWriter, markerPrefix } from './dir-writer.ts';
import { describeSecret, type SecretKey, type SecretName, type SecretResolver } from './resolver.ts';

/**
 * The standalone SecretResolver: environment variables, files, and
 * Kubernetes-style references `{name, namespace, key}` read from a directory
 * laid out like mounted Secret volumes: `<secretsDir>/<namespace>/<name>/<key>`.
 * Cluster-scoped kinds (Sync, OpenStackCloud) have no namespace; their Secrets
 * sit under the agent's namespace, as in the cluster (`kupenstack-system`).
 *
 * Every call reads again: a rotated token or a fixed file takes effect
 * without a restart. One trailing newline is dropped (files written by `echo`).
 *
 * Permissions: files readable by group or others are NOT refused. A mounted
 * Secret volume is 0644 unless its `defaultMode` says otherwise, so refusing
 * would break the layout this resolver copies; keep secretsDir itself 0700.
 */
export class EnvFileSecretResolver implements SecretResolver {
  readonly secretsDir: string;
  /** Secrets KupenStack makes land where this resolver reads them (an ApplicationCredential's folder). */
  readonly writer: DirSecretWriter;
  readonly #env: NodeJS.ProcessEnv;
  readonly #clusterNamespace: string;

  constructor(opts: { secretsDir: string; env?: NodeJS.ProcessEnv; clusterNamespace?: string }) {
    this.secretsDir = opts.secretsDir;
    this.writer = new DirSecretWriter(opts.secretsDir);
    this.#env = opts.env ?? process.env;
    this.#clusterNamespace = opts.clusterNamespace ?? defaultClusterNamespace;
  }

  get(ref: SecretKey): Promise<string> {
    try {
      return Promise.resolve(this.getSync(ref));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Same as get, for the few callers that cannot wait (configuration checks at startup). */
  getSync(ref: SecretKey): string {
    if (ref.env !== undefined) {
      const value = this.#env[ref.env];
      if (value === undefined || value === '') throw new SecretNotFoundError(ref, 'unset', `environment variable ${ref.env} is not set`);
      return value;
    }
    if (ref.file !== undefined) return readValue(ref, ref.file);
    if (!ref.key) throw new SecretNotFoundError(ref, 'missing', `${describeSecret(ref)}: no key named; say which key of the Secret holds the value`);
    return readValue(ref, join(this.#secretDir(ref), ref.key));
  }

  async getAll(ref: SecretName): Promise<Record<string, string>> {
    if (ref.env !== undefined || ref.file !== undefined) return { [ref.env ?? ref.file!]: await this.get(ref) };
    const dir = this.#secretDir(ref);
    let keys: string[];
    try {
      // `..data` and its timestamped twin are how kubelet swaps a Secret atomically, and the writer's own
      // markers sit beside the keys: neither is a key (`.dockerconfigjson` is one).
      keys = readdirSync(dir).filter((k) => !k.startsWith('..') && !k.startsWith(markerPrefix));
    } catch (err) {
      throw new SecretNotFoundError(ref, 'missing', `${describeSecret(ref)} not found: no directory ${dir} (${errno(err)}); create it with one file per key`, {
        cause: err,
      });
    }
    return Object.fromEntries(keys.sort().map((key) => [key, this.getSync({ ...ref, key })]));
  }

  #secretDir(ref: SecretName): string {
    if (!ref.name) throw new SecretNotFoundError(ref, 'missing', 'a secret reference names neither env, file nor a Secret name');
    for (const part of [ref.name, ref.namespace])
      if (part !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(part))
        throw new SecretNotFoundError(ref, 'missing', `${describeSecret(ref)}: "${part}" is not a Kubernetes name`);
    return join(this.secretsDir, ref.namespace ?? this.#clusterNamespace, ref.name);
  }
}

/** In the cluster, cluster-scoped kinds read Secrets from the agent's namespace (deploy/agent/kustomization.yaml). */
const defaultClusterNamespace = 'kupenstack-system';

export type SecretProblem = 'unset' | 'missing' | 'unreadable' | 'empty';

/** A referenced secret cannot be read. The message names the reference (variable, file, Secret and key), never a value. */
export class SecretNotFoundError extends KupenstackError {
  readonly ref: SecretKey;
  readonly problem: SecretProblem;

  constructor(ref: SecretKey, problem: SecretProblem, message: string, options?: { cause?: unknown }) {
    super('secret.not-found', message, options);
    this.ref = ref;
    this.problem = problem;
  }
}

function readValue(ref: SecretKey, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = errno(err);
    throw new SecretNotFoundError(
      ref,
      code === 'ENOENT' ? 'missing' : 'unreadable',
      `cannot read ${path}: ${code}${ref.file === undefined ? ` (${describeSecret(ref)})` : ''}`,
      { cause: err },
    );
  }
  const value = text.replace(/\r?\n$/, '');
  if (value === '')
    throw new SecretNotFoundError(ref, 'empty', `${path} is empty${ref.file === undefined ? ` (${describeSecret(ref)})` : ''}; write the value into it`);
  return value;
}

function errno(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'error';
}

/**
 * Reads one secret now, the message prefixed with what it is for
 * (`Sync main webhook secret: environment variable HOOK is not set`).
 */
export function readSecret(
  ref: SecretKey,
  what: string,
  resolver: EnvFileSecretResolver = new EnvFileSecretResolver({ secretsDir: '.kupenstack/secrets' }),
): string {
  try {
    return resolver.getSync(ref);
  } catch (err) {
    if (err instanceof SecretNotFoundError) throw new SecretNotFoundError(err.ref, err.problem, `${what}: ${err.message}`, { cause: err });
    throw err;
  }
}
