import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Dispatcher } from 'undici';
import { chooseSemverTag } from '../../lib/semver-tag.ts';
import type { CredentialStore } from '../../oci/auth/credentials.ts';
import { openBlob } from '../../oci/blob.ts';
import { RegistryClient } from '../../oci/client.ts';
import { verifyCosign } from '../../oci/cosign-verify.ts';
import { parseDigest } from '../../oci/digest.ts';
import { OciError, type OciErrorCode } from '../../oci/errors.ts';
import { contentLayerIndex, fluxContentMediaType } from '../../oci/flux-artifact.ts';
import { fetchManifest } from '../../oci/manifest.ts';
import { parseRepository } from '../../oci/reference.ts';
import type { SignaturePolicy } from '../../oci/signature-policy.ts';
import { listTags } from '../../oci/tags.ts';
import { pathExists } from '../util/fs.ts';
import { SourceConfigError } from './config-error.ts';
import { defaultUnpackLimits, unpackTarGz, type UnpackLimits } from './oci-unpack.ts';
import { resolveSourcePath, sourcePathOrError } from './source-path.ts';
import { SourceError, type Artifact, type Source, type SourceFailure } from './source.ts';

/**
 * A Sync's manifests from an OCI artifact (Flux's OCIRepository): the tag,
 * semver range or digest is resolved to a manifest digest at each fetch, the
 * signature checked (before any byte of the content is read), and the
 * content layer pulled and unpacked once per digest into the cache. The
 * revision is `<tag>@sha256:…` (Flux's), or the digest alone when pinned.
 * The registry client, the verifier and the tag rule are oci/'s and lib/'s,
 * the ones the Image kind uses.
 */

export interface OciRef {
  tag?: string;
  semver?: string;
  digest?: string;
}

export interface OciSourceOptions {
  /** oci://host[:port]/repository */
  url: string;
  ref: OciRef;
  path?: string;
  insecure?: boolean;
  /** Read before every fetch: a rotated Secret applies without a new source. */
  credentials?: () => Promise<CredentialStore | undefined>;
  /** The signature policy, read before every fetch; absent: no check. */
  signaturePolicy?: () => Promise<SignaturePolicy>;
  /** Survives restarts; several sources may share it (entries are named by digest). */
  cacheDir: string;
  userAgent?: string;
  dispatcher?: Dispatcher;
  limits?: UnpackLimits;
}

/** What a user sets when an https registry answers in plain HTTP. */
const plainHttpAdvice = 'set insecure: true under spec.source.oci';

const failures: Partial<Record<OciErrorCode, SourceFailure>> = {
  'oci.auth': 'auth',
  'oci.credentials': 'auth',
  'oci.not-found': 'ref-not-found',
  'oci.network': 'unreachable',
  'oci.registry': 'unreachable',
  'oci.truncated': 'unreachable',
  'oci.signature': 'signature',
};

export class OciSource implements Source {
  readonly kind = 'oci' as const;
  readonly description: string;
  private readonly registry: string;
  private readonly repository: string;
  private readonly path: string;
  private readonly pathError: SourceError | undefined;
  private readonly options: OciSourceOptions;

  constructor(options: OciSourceOptions) {
    this.options = options;
    const ref = options.ref;
    if ([ref.tag, ref.semver, ref.digest].filter((v) => v !== undefined).length !== 1)
      throw new SourceConfigError('source.oci.ref must name exactly one of tag, semver or digest');
    if (!options.url.startsWith('oci://')) throw new SourceConfigError(`source.oci.url "${options.url}" must start with oci://`);
    try {
      ({ registry: this.registry, repository: this.repository } = parseRepository(options.url.slice('oci://'.length)));
    } catch (err) {
      throw new SourceConfigError(`source.oci.url: ${(err as Error).message}`, { cause: err });
    }
    const { path, error } = sourcePathOrError(options.path);
    this.path = path;
    this.pathError = error;
    const at = ref.tag !== undefined ? `:${ref.tag}` : ref.semver !== undefined ? ` semver ${ref.semver}` : `@${ref.digest ?? ''}`;
    this.description = `oci://${this.registry}/${this.repository}${at}${path === '.' ? '' : ` path ${path}`}`;
  }

  async fetch(signal?: AbortSignal): Promise<Artifact> {
    if (this.pathError) throw this.pathError;
    try {
      return await this.fetchOnce(signal);
    } catch (err) {
      if (err instanceof OciError) throw new SourceError(failures[err.code] ?? 'artifact', err.message, { cause: err });
      throw err;
    }
  }

  private async fetchOnce(signal: AbortSignal | undefined): Promise<Artifact> {
    const { options, repository } = this;
    const credentials = await options.credentials?.();
    const client = new RegistryClient({
      registry: this.registry,
      insecure: options.insecure === true,
      plainHttpAdvice,
      ...(credentials ? { credentials } : {}),
      ...(options.userAgent ? { userAgent: options.userAgent } : {}),
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    const name = await this.tagName(client, signal);
    const fetched = await fetchManifest(client, repository, name ?? options.ref.digest ?? '', signal);
    const digest = fetched.digest;
    const where = `oci://${this.registry}/${repository}${name !== undefined ? `:${name}` : ''}@${digest}`;
    const manifest = fetched.manifest;
    const advice = 'push the folder with kupenstack push manifests (or flux push artifact)';
    if (manifest.kind !== 'manifest') throw new SourceError('artifact', `${where} is an image index, not a manifests artifact; ${advice}`);
    const layer = manifest.layers[contentLayerIndex(manifest.layers)];
    if (!layer)
      throw new SourceError('artifact', `${where} has no ${fluxContentMediaType} layer (nor one tar+gzip layer), so it is not a manifests artifact; ${advice}`);
    // Checked before any byte of the content is read: an unsigned revision is never unpacked.
    const policy = await options.signaturePolicy?.();
    if (policy) await verifyCosign(client, repository, where, [digest], policy, signal);
    const root = await this.unpacked(client, digest, layer, where, signal);
    return { revision: name !== undefined ? `${name}@${digest}` : digest, dir: await resolveSourcePath(root, this.path, where) };
  }

  /** The tag to read (the tag itself, or the highest match of the range); undefined for a pinned digest. */
  private async tagName(client: RegistryClient, signal: AbortSignal | undefined): Promise<string | undefined> {
    const { tag, semver } = this.options.ref;
    if (tag !== undefined) return tag;
    if (semver === undefined) return undefined;
    const chosen = chooseSemverTag(await listTags(client, this.repository, signal), semver);
    const repo = `${this.registry}/${this.repository}`;
    if (chosen === undefined) {
      throw new SourceError(
        'ref-not-found',
        `no tag of oci://${repo} matches the semver range "${semver}"; push one (kupenstack push manifests DIR ${repo}:<version>) or widen the range`,
      );
    }
    return chosen;
  }

  /** The content of `digest`, unpacked once into the cache: a folder named by the digest is complete (it appears by a rename). */
  private async unpacked(
    client: RegistryClient,
    digest: string,
    layer: { digest: string; size: number },
    where: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    const { algorithm, hex } = parseDigest(digest);
    const base = this.options.cacheDir;
    const dir = join(base, `${algorithm}-${hex}`);
    if (await pathExists(dir)) return dir;
    await mkdir(base, { recursive: true });
    const temporary = join(base, `.tmp-${hex.slice(0, 12)}-${randomBytes(4).toString('hex')}`);
    await mkdir(temporary);
    try {
      const limits = this.options.limits ?? defaultUnpackLimits;
      if (layer.size > limits.maxBytes) {
        throw new SourceError(
          'artifact',
          `${where}: its content layer is ${layer.size} bytes (limit ${limits.maxBytes}); a manifests artifact holds manifests, not data`,
        );
      }
      await unpackTarGz(openBlob(client, this.repository, layer, { signal }), temporary, where, limits);
      await rename(temporary, dir).catch(async (err: NodeJS.ErrnoException) => {
        // Another Sync of the same artifact got there first: its copy is the same bytes.
        if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
        await rm(temporary, { recursive: true, force: true });
      });
      return dir;
    } catch (err) {
      await rm(temporary, { recursive: true, force: true });
      throw err;
    }
  }

  async close(): Promise<void> {
    // Nothing held open: the cache stays for the next start.
  }
}
