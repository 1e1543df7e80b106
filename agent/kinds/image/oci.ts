import type { DiskRequest, DiskSource, ResolvedDisk } from '../../../oci/disk-source.ts';
import { apiHost, formatRequest, parseRepository } from '../../../oci/reference.ts';
import { KupenstackError } from '../../errors.ts';
import { DiskSources } from '../../glance/registry-source.ts';
import { egressFor } from '../../net/egress.ts';
import { mayUseAgentCredentials } from '../../net/registry-credentials.ts';
import { currentVersion, ociTag, propDigest, staleVersions, versionProperties, type GlanceImage } from '../../glance/version-rules.ts';
import {
  applyRetention,
  deleteVersion,
  demote,
  findOrCreateVersion,
  promote,
  uploadVersion,
  type GlanceTarget,
  type VersionLook,
} from '../../glance/versions.ts';
import type { ImageSpec } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';
import { markerFromMetadata, ownerTag, stableJson, type Marker } from '../../ownership/marker.ts';
import { describeSecret, type SecretResolver } from '../../secrets/resolver.ts';
import { lookedUpId, openstackName, pick, type AdapterContext, type Remote, type Waiting } from '../kit/adapter.ts';
import { ImageMemory } from '../kit/image-memory.ts';
import { readRegistrySecret } from './registry-secret.ts';
import { gateReason, gateResolution } from './rollout-gate.ts';
import { resolveDue } from './oci-poll.ts';
import { ociSourceField, toRemote } from './remote.ts';
import { checkImageRoom } from './room.ts';
import { policyOf, verifyResolved } from './verify.ts';
import { verifyAttested } from './attest.ts';

/**
 * The Image kind with `source.oci` (the map of a tag move is in adapter.ts).
 * One Glance image per manifest digest (the versions); the manifest's object
 * is the current version, the one holding the image name and the `oci-tag:`
 * tag. The fields:
 * - `digest`: the manifest digest the current version holds (null while
 *   queued); desired = where the tag points now. Its update uploads a queued
 *   current version, or moves the tag to the new digest's version (imported
 *   or found), which gives the manifest a new Glance id: update() returns it.
 * - `stale_versions`: other versions still shown or tagged (a crash between
 *   promote and demote); desired none.
 * - `source`: 'oci', or 'oci:<disk>' for a named KubeVirt disk (a switch between URL and OCI, or to another disk, replaces).
 */

type OciSource = NonNullable<NonNullable<ImageSpec['source']>['oci']>;

const specOf = (m: Manifest): ImageSpec => m.spec;

export function isOciManifest(m: Manifest): boolean {
  return specOf(m).source?.oci !== undefined;
}

function ociSourceOf(m: Manifest): OciSource {
  const oci = specOf(m).source?.oci;
  if (!oci) throw new KupenstackError('internal', `${m.address} has no source.oci`);
  return oci;
}

function requestOf(oci: OciSource): DiskRequest {
  return {
    repository: oci.repository,
    ...(oci.digest ? { digest: oci.digest } : oci.semver ? { semver: oci.semver } : { tag: oci.tag ?? 'latest' }),
    ...(oci.platform ? { platform: oci.platform } : {}),
    ...(oci.insecure ? { insecure: true } : {}),
    ...(oci.disk !== undefined ? { disk: oci.disk } : {}),
  };
}

/**
 * The adapter context with the SecretResolver the engine hands in
 * (EngineDeps.secrets); optional until every caller passes one.
 */
export type ImageContext = AdapterContext & { secrets?: SecretResolver };

/** What an Image's user is told when its https registry answers in plain HTTP. */
const plainHttpAdvice = 'set insecure: true under spec.source.oci';

/**
 * The registry client for this manifest: anonymous or the agent's docker
 * config (in a tenant namespace only for the registries the cluster admin
 * lists), or the `.dockerconfigjson` Secret `credentialsSecretRef` names,
 * read through the SecretResolver at each use (a rotated Secret takes effect).
 */
export async function sourceOf(m: Manifest, ctx: ImageContext): Promise<DiskSource> {
  const oci = ociSourceOf(m);
  const ref = oci.credentialsSecretRef;
  const egress = egressFor(ctx.namespace);
  // No Secret named: the agent's own credentials only where the cluster admin allows them (net/registry-credentials.ts).
  if (!ref) return sourcesOf(ctx).get({ plainHttpAdvice, egress, anonymous: !mayUseAgentCredentials(ctx.namespace, parseRepository(oci.repository).registry) });
  const secret = { name: ref.name, namespace: ctx.namespace, key: '.dockerconfigjson' };
  if (!ctx.secrets) {
    throw new KupenstackError(
      'image.oci-credentials',
      `${m.address}: source.oci.credentialsSecretRef names ${describeSecret(secret)}, but this agent reads no Secrets; give it a secret resolver, ` +
        `or a docker config file (DOCKER_CONFIG) and drop credentialsSecretRef`,
    );
  }
  const { store, hash } = await readRegistrySecret(ctx.secrets, secret, (why) => new KupenstackError('image.oci-credentials', `${m.address}: ${why}`));
  // The cache key names the Secret and a hash of its value (a rotation makes a new client), never the value.
  const key = `${describeSecret(secret)}#${hash.slice(0, 16)}`;
  return sourcesOf(ctx).get({ credentials: { key, store }, plainHttpAdvice, egress });
}

/** The front end's registry clients; a context without (an adapter driven alone) gets a client per call. */
function sourcesOf(ctx: ImageContext): DiskSources {
  return ctx.images?.sources ?? new DiskSources();
}

/**
 * Where the manifest's reference points now. One resolve per repository and
 * tag per run (ctx.memo), and none at all while `interval`/`schedule` say
 * the last answer is recent enough. A pinned digest never moves.
 */
export async function resolveManifest(m: Manifest, ctx: ImageContext): Promise<ResolvedDisk> {
  const disk = await resolveFollowed(m, ctx);
  const oci = ociSourceOf(m);
  if (oci.digest !== undefined) return disk;
  // An ImageRollout governing the tag decides which digest this namespace uses now (rollout-gate.ts).
  return gateResolution(m, ctx, { repository: oci.repository, tag: oci.semver ? undefined : (oci.tag ?? 'latest'), semver: oci.semver }, disk, (digest) =>
    resolvePinned(m, ctx, digest),
  );
}

/** A digest a rollout holds this manifest at: resolved and verified as a pinned reference would be. */
async function resolvePinned(m: Manifest, ctx: ImageContext, digest: string): Promise<ResolvedDisk> {
  const request = { ...requestOf(ociSourceOf(m)), digest };
  delete request.tag;
  delete request.semver;
  const source = await sourceOf(m, ctx);
  const disk = await ctx.memo(`Image:oci:${stableJson(request)}`, () => source.resolve(request, ctx.signal));
  await verifyResolved(m, ctx, source, disk);
  return disk;
}

/** Where the manifest's tag points, as the registry says (before any rollout's gate). */
async function resolveFollowed(m: Manifest, ctx: ImageContext): Promise<ResolvedDisk> {
  const spec = specOf(m);
  const oci = ociSourceOf(m);
  const request = requestOf(oci);
  const key = stableJson(request);
  // The policy is part of the key: a remembered answer was verified under the policy it was resolved with.
  const cacheKey = `${ctx.projectId}|${m.address}|${key}|${stableJson(policyOf(m, ctx) ?? null)}`;
  // Remembered by the front end that runs the kind (ImageMemory); without one, every run resolves afresh.
  const images = ctx.images ?? new ImageMemory();
  const cached = images.resolved.get(cacheKey);
  // Named moved by a registry notification (ctx.refresh): due whatever the interval says, once per run (its passes share the set).
  const refresh = ctx.refresh?.has(m.address) === true ? ctx.refresh : undefined;
  if (
    cached &&
    (request.digest !== undefined ||
      (!resolveDue(cached.at, Date.now(), { interval: spec.interval, schedule: spec.schedule }) && (refresh === undefined || cached.refresh === refresh)))
  )
    return cached.disk;
  // The time the resolution started: the interval counts from here.
  const startedAt = Date.now();
  // The registry's API origin judged first: a refusal names the rule before the client's retries of a refused connection.
  await egressFor(ctx.namespace)?.check(registryOrigin(request));
  const source = await sourceOf(m, ctx);
  const disk = await ctx.memo(`Image:oci:${key}`, () => source.resolve(request, ctx.signal));
  // Before anything is made in Glance (create, upload, tag move all start from this answer).
  await verifyResolved(m, ctx, source, disk);
  await verifyAttested(m, ctx, source, disk);
  images.resolved.set(cacheKey, { address: m.address, disk, at: startedAt, ...(refresh ? { refresh } : {}) });
  return disk;
}

function lookOf(m: Manifest, disk: ResolvedDisk, marker?: Marker): VersionLook {
  const spec = specOf(m);
  return {
    name: openstackName(m),
    diskFormat: spec.diskFormat,
    containerFormat: spec.containerFormat,
    visibility: spec.visibility,
    protected: spec.protected,
    minDisk: spec.minDisk ?? disk.minDisk,
    minRam: spec.minRam ?? disk.minRam,
    properties: versionProperties(disk, spec.allowedProperties ?? [], spec.properties ?? {}),
    tags: [...new Set([...(spec.tags ?? []), ...(disk.tag !== undefined && request(m).digest === undefined ? [ociTag(disk.tag)] : [])])],
    marker,
  };
}

const request = (m: Manifest): DiskRequest => requestOf(ociSourceOf(m));

export async function ociDesired(m: Manifest, ctx: ImageContext): Promise<Record<string, unknown>> {
  const spec = specOf(m);
  if (ctx.offline) return offlineDesired(m);
  const disk = await resolveManifest(m, ctx);
  const look = lookOf(m, disk);
  const out: Record<string, unknown> = {
    name: look.name,
    ...pick(spec, { diskFormat: 'disk_format', containerFormat: 'container_format', visibility: 'visibility', protected: 'protected' }),
    properties: look.properties,
    tags: [...look.tags].sort(),
    source: ociSourceField(specOf(m).source?.oci?.disk),
    digest: disk.manifestDigest,
    stale_versions: [],
  };
  if (look.minDisk !== undefined) out.min_disk = look.minDisk;
  if (look.minRam !== undefined) out.min_ram = look.minRam;
  return out;
}

/**
 * `plan --base`: no registry is asked. The digest is named by the reference
 * the manifest follows, so a moved tag or pin shows as a new version; what
 * only the registry knows (digest, disk annotations) is left out on both sides.
 */
function offlineDesired(m: Manifest): Record<string, unknown> {
  const spec = specOf(m);
  const oci = ociSourceOf(m);
  const out: Record<string, unknown> = {
    name: openstackName(m),
    ...pick(spec, {
      diskFormat: 'disk_format',
      containerFormat: 'container_format',
      visibility: 'visibility',
      protected: 'protected',
      minDisk: 'min_disk',
      minRam: 'min_ram',
    }),
    properties: spec.properties ?? {},
    tags: [...new Set([...(spec.tags ?? []), ...(oci.tag !== undefined && oci.digest === undefined ? [ociTag(oci.tag)] : [])])].sort(),
    source: ociSourceField(oci.disk),
    digest: lookedUpId(`digest of ${formatRequest(oci)}`),
  };
  return out;
}

/** For the plan's image lines: the reference the manifest follows, from the digest in use to the digest now. */
export function ociFollows(
  m: Manifest,
  desired: Record<string, unknown>,
  remote: Remote | undefined,
): { reference: string; from?: string; to: string } | undefined {
  if (!isOciManifest(m) || typeof desired.digest !== 'string') return undefined;
  const from = remote?.raw[propDigest];
  const held = gateReason(m);
  const reference = formatRequest(ociSourceOf(m)) + (held ? ` (${held})` : '');
  return { reference, ...(typeof from === 'string' ? { from } : {}), to: desired.digest };
}

const versionsOf = new WeakMap<Remote, GlanceImage[]>();

/** The versions observe() saw behind this remote; undefined for a URL image. */
export function ociVersionsOf(remote: Remote): GlanceImage[] | undefined {
  return versionsOf.get(remote) ?? (typeof remote.raw[propDigest] === 'string' && remote.marker ? [remote.raw as GlanceImage] : undefined);
}

/** One Remote per manifest: OCI versions of one marker ref collapse into the current one. */
export function withVersions(raws: Record<string, unknown>[]): Remote[] {
  const groups = new Map<string, GlanceImage[]>();
  const out: Remote[] = [];
  for (const raw of raws) {
    const ref = markerFromMetadata(raw)?.ref;
    if (typeof raw[propDigest] !== 'string' || !ref) {
      out.push(toRemote(raw));
      continue;
    }
    groups.set(ref, [...(groups.get(ref) ?? []), raw as GlanceImage]);
  }
  for (const group of groups.values()) {
    const current = currentVersion(group)!;
    const remote = toRemote(current);
    remote.fields.stale_versions = staleVersions(group, current.id)
      .map((v) => v.id)
      .sort();
    versionsOf.set(remote, group);
    out.push(remote);
  }
  return out;
}

function targetOf(ctx: AdapterContext): GlanceTarget {
  return { image: ctx.apis.image, compute: ctx.apis.compute, projectId: ctx.projectId, signal: ctx.signal, requeue: ctx.requeue };
}

/** Every version carrying the manifest's marker, shown and hidden. */
async function listVersions(ctx: AdapterContext, marker: Marker): Promise<GlanceImage[]> {
  const query = { owner: ctx.projectId, visibility: 'all', tag: ownerTag(marker.owner), kupenstack_ref: marker.ref };
  const [shown, hidden] = await Promise.all([
    ctx.apis.image.list<GlanceImage>('/images', 'images', query),
    ctx.apis.image.list<GlanceImage>('/images', 'images', { ...query, os_hidden: true }),
  ]);
  return [...shown, ...hidden].filter((v) => markerFromMetadata(v)?.owner === marker.owner && typeof v[propDigest] === 'string');
}

/**
 * The first version: found by digest (no second transfer; an image made by
 * `kupenstack image import` is adopted) or created queued with the marker.
 * A found version that was hidden takes the tag right away.
 */
export async function ociCreate(ctx: ImageContext, m: Manifest, marker: Marker): Promise<Remote> {
  const disk = await resolveManifest(m, ctx);
  await checkImageRoom(ctx, m.address, disk);
  const look = lookOf(m, disk, marker);
  const g = targetOf(ctx);
  const found = await findOrCreateVersion(g, disk, look, { hidden: false });
  // A create never waits (kinds/kit/adapter.ts): another worker storing the digest (requeue mode) fails it for this run; the next run adopts its image.
  if ('waiting' in found) throw new KupenstackError('image.oci-busy', `${found.waiting.reason}; the next run uses it`);
  const { image, created } = found.done;
  return toRemote(created ? image : await promote(g, image, look));
}

/**
 * Uploads a queued current version, or moves the tag to the version of
 * the digest the reference points to now (returned: the manifest's new
 * object). Fields left for the generic PATCH path: undefined is returned.
 */
export async function ociUpdate(ctx: ImageContext, remote: Remote, changes: Record<string, unknown>, m: Manifest): Promise<Remote | Waiting | undefined> {
  if (!isOciManifest(m)) return undefined;
  const g = targetOf(ctx);
  const marker = remote.marker ?? markerFromMetadata(remote.raw);
  if (!marker) throw new KupenstackError('internal', `Glance image ${remote.id} carries no marker`);
  const disk = await resolveManifest(m, ctx);
  const look = lookOf(m, disk, marker);
  if ('digest' in changes && remote.raw[propDigest] === disk.manifestDigest) {
    if (remote.status === 'queued') {
      const stored = await uploadVersion(g, remote.raw as GlanceImage, disk, await sourceOf(m, ctx));
      if ('waiting' in stored) return stored;
      remote.raw = stored.done;
    }
  } else if ('digest' in changes) {
    return moveTag(ctx, g, remote, marker, disk, look, m);
  }
  if ('stale_versions' in changes) {
    const versions = ociVersionsOf(remote) ?? (await listVersions(ctx, marker));
    for (const old of staleVersions(versions, remote.id)) await demote(g, old, look.name, String(remote.raw[propDigest]));
  }
  return undefined;
}

/** Step 3 and 4 of a tag move (adapter.ts): the new digest's version takes the name and tag, the old ones are hidden, retention runs. */
async function moveTag(
  ctx: ImageContext,
  g: GlanceTarget,
  remote: Remote,
  marker: Marker,
  disk: ResolvedDisk,
  look: VersionLook,
  m: Manifest,
): Promise<Remote | Waiting> {
  await checkImageRoom(ctx, m.address, disk);
  // Hidden and under its version name until its data is verified and stored: the image name never shows a half-made image.
  const found = await findOrCreateVersion(g, disk, look, { hidden: true });
  if ('waiting' in found) return found;
  let next = found.done.image;
  if (next.status === 'queued') {
    const stored = await uploadVersion(g, next, disk, await sourceOf(m, ctx));
    if ('waiting' in stored) return stored;
    next = stored.done;
  }
  // Add before remove: the new version takes the name and tag, then the old ones let go of them.
  next = await promote(g, next, look);
  const before = await listVersions(ctx, marker);
  for (const old of staleVersions(before, next.id)) await demote(g, old, look.name, disk.manifestDigest);
  const keep = specOf(m).keep ?? 3;
  await applyRetention(g, await listVersions(ctx, marker), next.id, keep);
  return toRemote(next);
}

/** The manifest is gone from Git: all its versions go (they carry its marker; the plan says image-deleted). */
export async function ociDelete(ctx: AdapterContext, remote: Remote): Promise<void> {
  const g = targetOf(ctx);
  const marker = remote.marker ?? markerFromMetadata(remote.raw);
  const versions = marker ? await listVersions(ctx, marker) : [];
  for (const id of new Set([remote.id, ...versions.map((v) => v.id)])) await deleteVersion(g, id);
}

/** scheme://host[:port]/v2/ of the registry a request names: what the egress policy judges before any registry call. */
function registryOrigin(request: DiskRequest): string {
  const { registry } = parseRepository(request.repository);
  return `${request.insecure ? 'http' : 'https'}://${apiHost(registry)}/v2/`;
}
