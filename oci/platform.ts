import type { Platform } from './disk-source.ts';
import { OciError } from './errors.ts';
import type { Descriptor, ImageIndex } from './manifest.ts';

/**
 * Choosing one manifest of a multi-arch index. Default linux/amd64: the
 * architecture of nearly every OpenStack compute fleet and what `docker
 * pull` on such a host would take; other clouds name their platform.
 * Architecture names are OCI's (amd64, arm64); Glance/libosinfo names
 * (x86_64, aarch64) are accepted and translated.
 */

export const defaultPlatform: Platform = { os: 'linux', architecture: 'amd64' };

const toOci: Record<string, string> = { x86_64: 'amd64', aarch64: 'arm64', armv7l: 'arm', i686: '386', i386: '386', ppc64el: 'ppc64le' };
const toGlance: Record<string, string> = { amd64: 'x86_64', arm64: 'aarch64', arm: 'armv7l', '386': 'i686' };

export function ociArchitecture(arch: string): string {
  return toOci[arch] ?? arch;
}

/** Glance's `architecture` property for an OCI architecture (amd64 → x86_64). */
export function glanceArchitecture(arch: string): string {
  return toGlance[arch] ?? arch;
}

/** `linux/arm64/v8` or `arm64` → Platform. */
export function parsePlatform(text: string): Platform {
  const parts = text.split('/');
  if (parts.length === 1 && parts[0]) return { os: 'linux', architecture: ociArchitecture(parts[0]) };
  if ((parts.length === 2 || parts.length === 3) && parts[0] && parts[1]) {
    return { os: parts[0], architecture: ociArchitecture(parts[1]), ...(parts[2] ? { variant: parts[2] } : {}) };
  }
  throw new OciError('oci.reference', `"${text}" is not a platform; write os/architecture[/variant], e.g. linux/amd64 or linux/arm64`);
}

export function formatPlatform(p: Platform): string {
  return [p.os ?? 'linux', p.architecture, p.variant].filter(Boolean).join('/');
}

function matches(entry: Platform | undefined, wanted: Platform): boolean {
  if (!entry) return false;
  if (ociArchitecture(entry.architecture) !== ociArchitecture(wanted.architecture)) return false;
  if ((entry.os ?? 'linux') !== (wanted.os ?? 'linux')) return false;
  if (wanted.variant && entry.variant && entry.variant !== wanted.variant) return false;
  if (wanted.variant && !entry.variant && !(wanted.architecture === 'arm64' && wanted.variant === 'v8')) return false;
  return true;
}

/**
 * The index entry for `wanted`: an exact variant beats none; attestation
 * manifests (buildkit's `unknown/unknown`) never match. An index with one
 * platform-less entry is a wrapper around it.
 */
export function selectPlatform(index: ImageIndex, wanted: Platform, where: string): Descriptor {
  const candidates = index.manifests.filter((m) => m.annotations?.['vnd.docker.reference.type'] !== 'attestation-manifest');
  const hits = candidates.filter((m) => matches(m.platform, wanted));
  if (hits.length > 0) {
    const exact = wanted.variant ? hits.find((h) => h.platform?.variant === wanted.variant) : hits.find((h) => !h.platform?.variant);
    return exact ?? hits[0]!;
  }
  if (candidates.length === 1 && !candidates[0]!.platform) return candidates[0]!;
  const offered = candidates.map((m) => (m.platform ? formatPlatform(m.platform) : 'no platform')).join(', ');
  throw new OciError(
    'oci.platform',
    `${where} is a multi-platform index without ${formatPlatform(wanted)} (it has: ${offered || 'nothing'}); ask for one of those platforms`,
  );
}
