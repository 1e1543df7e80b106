import type { ResolvedDisk } from '../../oci/disk-source.ts';
import { uuid5 } from '../util/uuid5.ts';

/**
 * The pure rules of OCI image versions in Glance: ids, names, tags, which
 * version is the current one, and which old versions retention may delete.
 * No I/O here: the Glance calls live in versions.ts.
 */

/** A Glance image as listed, with the keys the OCI pipeline reads. */
export interface GlanceImage extends Record<string, unknown> {
  id: string;
  name?: string;
  status: string;
  os_hidden?: boolean;
  protected?: boolean;
  tags?: string[];
  created_at?: string;
  updated_at?: string;
  size?: number | null;
}

const propRepository = 'oci_repository';
export const propTag = 'oci_tag';
export const propDigest = 'oci_manifest_digest';
/** When a version last took the image name (promote): decides the current version if a crash left two shown. */
export const propPromotedAt = 'oci_promoted_at';
export const propSupersededBy = 'oci_superseded_by';
export const propSupersededAt = 'oci_superseded_at';
export const ociTagPrefix = 'oci-tag:';
/** The disk format a version was pushed in, on a version Glance converted to raw (raw-target.ts). */
export const propSourceFormat = 'oci_source_disk_format';

/** The packaging when it is not our own artifact's (oci-pipeline.md §3.3): written for KubeVirt VM exports. */
const propFormat = 'oci_format';
/** The disk of a KubeVirt VM export a version holds when the source named one (io.kubevirt.disk.name): one manifest, several disks. */
export const propDisk = 'oci_disk';

/** Properties the pipeline writes itself: never taken from annotations, never treated as user drift. */
const pipelineProperties: readonly string[] = [
  propRepository,
  propTag,
  propDigest,
  propPromotedAt,
  propSupersededBy,
  propSupersededAt,
  propFormat,
  propDisk,
  propSourceFormat,
];
/** Keys the pipeline keeps on versions for its own bookkeeping: not user properties, never drift. */
export const bookkeepingProperties: ReadonlySet<string> = new Set([propPromotedAt, propSupersededBy, propSupersededAt, propFormat, propDisk, propSourceFormat]);

/**
 * The disk_format the manifest is compared with: the pushed one on a version
 * Glance converted to raw (spec.diskFormat names the artifact's format; the
 * raw image it became is no drift to correct).
 */
export function declaredDiskFormat(img: Record<string, unknown>): unknown {
  return typeof img[propSourceFormat] === 'string' ? img[propSourceFormat] : img.disk_format;
}

export function ociTag(tag: string): string {
  return `${ociTagPrefix}${tag}`;
}

/**
 * uuid5(project, manifest digest): a retried create answers 409 and is
 * adopted, never duplicated. Glance never frees a deleted image's id, so a
 * digest imported again after retention deleted it walks on to `#1`, `#2`.
 */
export function ociImageId(projectId: string, manifestDigest: string, attempt = 0): string {
  return uuid5(`oci-image:${projectId}@${manifestDigest}${attempt > 0 ? `#${attempt}` : ''}`);
}

/** What a version is made for: the manifest digest, and a KubeVirt export's disk name (each disk of one VM its own image). */
export function versionKey(disk: Pick<ResolvedDisk, 'manifestDigest' | 'diskName'>): string {
  return disk.diskName === undefined ? disk.manifestDigest : `${disk.manifestDigest}#disk=${disk.diskName}`;
}

/** A version found by digest holds this disk: the same KubeVirt disk name, or neither has one. */
export function sameDisk(img: GlanceImage, disk: Pick<ResolvedDisk, 'diskName'>): boolean {
  const name = typeof img[propDisk] === 'string' ? img[propDisk] : undefined;
  return name === disk.diskName;
}

/** The name an older version takes when a newer one holds the image name. */
export function versionName(name: string, manifestDigest: string): string {
  const hex = manifestDigest.replace(/^[a-z0-9]+:/, '').slice(0, 12);
  return `${name}@sha256:${hex}`;
}

/** `hw_*`, `os_distro`: shell-style globs (only `*` is special). */
export function globMatch(pattern: string, key: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(key);
}

/**
 * The Glance properties of a version: the artifact's properties that
 * `allowedProperties` lets through (a registry must not set, say,
 * `img_config_drive` or `hw_machine_type` unless the manifest allows it),
 * then the user's own (they win), then the pipeline's bookkeeping.
 */
export function versionProperties(disk: ResolvedDisk, allowed: readonly string[], user: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(disk.properties)) {
    if (pipelineProperties.includes(k) || k.startsWith('kupenstack_') || k.startsWith('os_glance_')) continue;
    if (allowed.some((p) => globMatch(p, k))) out[k] = v;
  }
  Object.assign(out, user);
  out[propRepository] = disk.repository;
  if (disk.tag !== undefined) out[propTag] = disk.tag;
  out[propDigest] = disk.manifestDigest;
  return out;
}

/** What a version is, written once when it is made (bookkeeping: its data never changes, so neither do they). */
export function creationProperties(disk: Pick<ResolvedDisk, 'packaging' | 'diskName'>): Record<string, string> {
  return {
    ...(disk.packaging === 'kubevirt-export' ? { [propFormat]: 'kubevirt-export' } : {}),
    ...(disk.diskName !== undefined ? { [propDisk]: disk.diskName } : {}),
  };
}

const time = (s: unknown): number => (typeof s === 'string' ? Date.parse(s) || 0 : 0);

/**
 * When a version was last current, in milliseconds: promote stamps it, demote replaces that stamp with
 * the time it was superseded, and a version never promoted has only Glance's created_at. A shown
 * version is current since its promote, whatever stale superseded stamp a crash left on it.
 */
const lastCurrent = (v: GlanceImage): number => Math.max(time(v[propPromotedAt]), v.os_hidden === true ? time(v[propSupersededAt]) : 0, time(v.created_at));

/**
 * Newest first: by when a version was last current, then Glance's created_at, then the id. created_at
 * alone has whole seconds and cannot order two versions of a fast tag-move loop.
 */
export const newestFirst = (a: GlanceImage, b: GlanceImage): number =>
  lastCurrent(b) - lastCurrent(a) || time(b.created_at) - time(a.created_at) || (a.id < b.id ? -1 : 1);

/**
 * The version that stands for the manifest: the shown one that took the
 * image name last (a crash between promoting the new and hiding the old leaves
 * two shown), else the newest shown, else the newest at all.
 */
export function currentVersion<T extends GlanceImage>(versions: readonly T[]): T | undefined {
  const shown = versions.filter((v) => v.os_hidden !== true);
  const pool = shown.length > 0 ? shown : versions;
  return [...pool].sort(newestFirst)[0];
}

/** Versions besides the current one that still look current (shown, or holding an OCI tag): to be hidden. */
export function staleVersions(versions: readonly GlanceImage[], currentId: string): GlanceImage[] {
  return versions.filter((v) => v.id !== currentId && (v.os_hidden !== true || (v.tags ?? []).some((t) => t.startsWith(ociTagPrefix))));
}

/**
 * Old versions that `keep` no longer retains and that are safe to delete:
 * hidden, without OCI tag, unprotected, used by no server. The current
 * version always counts as one of the `keep`; versions in use are kept on
 * top of them.
 */
export function retentionVictims(versions: readonly GlanceImage[], currentId: string, keep: number, inUse: ReadonlySet<string>): GlanceImage[] {
  const others = versions.filter((v) => v.id !== currentId).sort(newestFirst);
  return others
    .slice(Math.max(0, keep - 1))
    .filter((v) => v.os_hidden === true && !(v.tags ?? []).some((t) => t.startsWith(ociTagPrefix)) && v.protected !== true && !inUse.has(v.id));
}
