import { KupenstackError } from '../errors.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { ServiceClient } from '../openstack/service.ts';

/**
 * How a disk lands in the target Glance: as pushed, or raw. Ceph RBD clones
 * copy-on-write only from raw images, so a Ceph-backed Glance wants raw; only
 * Glance's interoperable import (stage + import glance-direct) runs its
 * `image_conversion` plugin, `PUT /file` never does. The choice is the
 * operator's (`--glance-disk-format`) or, by default, what Glance shows: an
 * `rbd` store in `/v2/info/stores/detail`.
 */

/** `auto`: raw where Glance shows an rbd store; `keep`: as pushed (PUT /file); `raw`: always raw. */
export const glanceDiskFormats = ['auto', 'keep', 'raw'] as const;
export type GlanceDiskFormat = (typeof glanceDiskFormats)[number];

let setting: GlanceDiskFormat = 'auto';

/** The process's setting, from `--glance-disk-format` (agent, controller, apply, image import). */
export function configureGlanceDiskFormat(value: GlanceDiskFormat): void {
  setting = value;
}

export function glanceDiskFormat(): GlanceDiskFormat {
  return setting;
}

/** What Glance tells about itself: its import methods, and its stores' types (undefined when not shown to this user). */
export interface GlanceImportInfo {
  methods: string[];
  storeTypes: string[] | undefined;
}

/** Formats qemu-img converts and Glance's image_conversion inspects; raw, iso and the ami kernels land as they are. */
const convertible: ReadonlySet<string> = new Set(['qcow2', 'vmdk', 'vhd', 'vhdx', 'vdi']);

export type UploadWay = { way: 'put' } | { way: 'import'; why: string } | { way: 'refuse'; reason: string };

/**
 * Pure: PUT /file unless raw is wanted and the disk is not raw. Then the
 * interoperable import when Glance offers glance-direct; else refused:
 * converting qcow2 needs random access (its clusters come in any order), so
 * it cannot be done while streaming. Raw, and gzip/zstd-compressed raw
 * (decompressed on the way), already land raw through PUT /file.
 */
export function chooseUpload(want: GlanceDiskFormat, info: GlanceImportInfo, diskFormat: string): UploadWay {
  const rbd = info.storeTypes?.includes('rbd') === true;
  const raw = want === 'raw' || (want === 'auto' && rbd);
  if (!raw || !convertible.has(diskFormat)) return { way: 'put' };
  const why = want === 'raw' ? '--glance-disk-format raw' : 'Glance stores on Ceph RBD (an rbd store in /v2/info/stores/detail)';
  if (info.methods.includes('glance-direct')) return { way: 'import', why };
  return {
    way: 'refuse',
    reason:
      `this cloud wants raw images (${why}) but Glance offers no glance-direct import to convert a ${diskFormat} disk ` +
      `(its import methods: ${info.methods.join(', ') || 'none'}); enable glance-direct with the image_conversion plugin ` +
      `([image_import_opts] image_import_plugins = ['image_conversion'], [image_conversion] output_format = raw), ` +
      `push the disk as raw (zstd- or gzip-compressed raw streams in constant memory), or run with --glance-disk-format keep`,
  };
}

/** Glance's answers, kept a while per client: every upload asks, the answer changes only with Glance's configuration. */
const infoCache = new WeakMap<ServiceClient, { at: number; info: Promise<GlanceImportInfo> }>();
const infoTtlMs = 10 * 60_000;

/** `GET /v2/info/import` and `/v2/info/stores/detail` (admin only: a refusal or an old Glance is "not shown"). */
export async function glanceImportInfo(image: ServiceClient, signal?: AbortSignal): Promise<GlanceImportInfo> {
  const hit = infoCache.get(image);
  if (hit && Date.now() - hit.at < infoTtlMs) return hit.info;
  const info = readInfo(image, signal);
  infoCache.set(image, { at: Date.now(), info });
  info.catch(() => infoCache.delete(image));
  return info;
}

async function readInfo(image: ServiceClient, signal?: AbortSignal): Promise<GlanceImportInfo> {
  const opts = { ok: [200, 403, 404], ...(signal ? { signal } : {}) };
  const [imp, stores] = await Promise.all([
    image.call<{ 'import-methods'?: { value?: unknown } }>('GET', '/info/import', opts),
    image.call<{ stores?: Array<{ type?: unknown }> }>('GET', '/info/stores/detail', opts),
  ]);
  const value = imp.status === 200 ? imp.body['import-methods']?.value : undefined;
  const methods = Array.isArray(value) ? value.filter((m): m is string => typeof m === 'string') : [];
  const storeTypes = stores.status === 200 ? (stores.body.stores ?? []).map((s) => String(s.type)) : undefined;
  return { methods, storeTypes };
}

/** The way this cloud takes a disk of this format; a refusal is thrown (before anything is made in Glance). */
export async function uploadWayFor(image: ServiceClient, diskFormat: string, signal?: AbortSignal): Promise<Exclude<UploadWay, { way: 'refuse' }>> {
  const want = glanceDiskFormat();
  if (want === 'keep' || !convertible.has(diskFormat)) return { way: 'put' };
  let info: GlanceImportInfo;
  try {
    info = await glanceImportInfo(image, signal);
  } catch (err) {
    if (!(err instanceof OpenStackError)) throw err;
    throw new KupenstackError(
      'image.glance-info',
      `could not read Glance's import methods and stores to decide how a ${diskFormat} disk lands: ${err.message}`,
      {
        cause: err,
      },
    );
  }
  const way = chooseUpload(want, info, diskFormat);
  if (way.way === 'refuse') throw new KupenstackError('image.no-conversion', way.reason);
  return way;
}
