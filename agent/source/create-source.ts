import type { Dispatcher } from 'undici';
import type { SyncSpec } from '../model/kinds.generated.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import { SourceConfigError } from './config-error.ts';
import { DirectorySource } from './directory.ts';
import { OciSource } from './oci.ts';
import { ociCredentials, ociSignaturePolicy } from './oci-secrets.ts';
import { checkGitRef } from './git-ref.ts';
import { GitSource, type GitSourceOptions } from './git.ts';
import type { Source } from './source.ts';
import { CommitVerifier } from './verify-signature.ts';

/** The part of a Sync spec that says where manifests come from. */
export type SourceSpec = Pick<SyncSpec, 'source' | 'path'>;

/**
 * What the caller resolved outside the spec: the spec only names Secrets
 * (`secretRef`, `publicKeysSecretRef`); the agent reads them (from the
 * cluster, or from kupenstack.yaml's env/file settings, see credentials.ts)
 * and passes the values here.
 */
export interface SourceContext {
  /** Where Git sources keep their cache (survives restarts). */
  cacheDir: string;
  /** A function is called before every fetch: a rotated token needs no new source. */
  credentials?: GitSourceOptions['credentials'];
  /** Armored OpenPGP public keys trusted for `verify.mode: head`; a function is read again before every fetch. */
  publicKeys?: readonly string[] | (() => Promise<readonly string[]>);
  /** undici dispatcher for Git over HTTPS (private CA, proxy). */
  dispatcher?: Dispatcher;
  onHttpRequest?: (method: string) => void;
  /** Directory sources: quiet time before a watch reports. */
  debounceMs?: number;
  /** OCI sources: where the registry credentials and the signature policy are read from (the agent's namespace in the cluster). */
  secrets?: SecretResolver;
  /** OCI sources: sent as User-Agent. */
  userAgent?: string;
}

/** Builds the Source a Sync names. Configuration that can never work throws a SourceConfigError. */
export async function createSource(spec: SourceSpec, context: SourceContext): Promise<Source> {
  const { git, oci, directory } = spec.source;
  if ([git, oci, directory].filter((s) => s !== undefined).length !== 1)
    throw new SourceConfigError('the source must name exactly one of git, oci or directory');
  if (directory) return new DirectorySource({ directory: directory.path, path: spec.path, debounceMs: context.debounceMs });
  if (oci) {
    const credentials = ociCredentials(oci, context.secrets);
    const signaturePolicy = ociSignaturePolicy(oci, context.secrets);
    return new OciSource({
      url: oci.url,
      ref: oci.ref,
      ...(spec.path !== undefined ? { path: spec.path } : {}),
      insecure: oci.insecure === true,
      cacheDir: context.cacheDir,
      ...(credentials ? { credentials } : {}),
      ...(signaturePolicy ? { signaturePolicy } : {}),
      ...(context.userAgent ? { userAgent: context.userAgent } : {}),
      ...(context.dispatcher ? { dispatcher: context.dispatcher } : {}),
    });
  }
  if (!git) throw new SourceConfigError('the source must name exactly one of git, oci or directory');
  const keys = context.publicKeys;
  let verifier: GitSourceOptions['verifier'];
  if (git.verify?.mode === 'head')
    verifier = typeof keys === 'function' ? async () => CommitVerifier.fromArmored(await keys()) : await CommitVerifier.fromArmored(keys ?? []);
  return new GitSource({
    url: git.url,
    ref: checkGitRef(git.ref),
    path: spec.path,
    credentials: context.credentials,
    cacheDir: context.cacheDir,
    verifier,
    dispatcher: context.dispatcher,
    onHttpRequest: context.onHttpRequest,
  });
}
