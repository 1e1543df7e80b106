import { createCipheriv, createDecipheriv, createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Marker } from '../../ownership/marker.ts';
import type { GlanceImage } from '../../glance/version-rules.ts';

/**
 * The tags that say which project's manifest uses a shared image (shared.ts).
 * Every member of the image sees its tags, so they name no project and no
 * manifest a member could read:
 * - `kupenstack-use:<pseudonym>:<specHash>:<sealed ref>`: this manifest uses this version;
 * - `kupenstack-current:<pseudonym>:<sealed ref>`: the version it stands for now.
 * The pseudonym is a hash of the project id (a tenant cannot list the
 * other projects; Keystone ids are random, so it cannot guess them either);
 * the ref (`Image/name`) is sealed with a key derived from the project id,
 * deterministically (the same tag every time, so adds and removes find it)
 * and checked when opened. Tags of the first format (the project id and
 * the ref in clear) are still read and replaced on the next use.
 */

export const usePrefix = 'kupenstack-use:';
const currentPrefix = 'kupenstack-current:';

/** 24 hex digits (96 bits) of SHA-256: no collision among a cloud's projects. */
export function projectPseudonym(projectId: string): string {
  return createHash('sha256').update(`kupenstack-project:${projectId}`).digest('hex').slice(0, 24);
}

function refKey(projectId: string): Buffer {
  return createHash('sha256').update(`kupenstack-ref:${projectId}`).digest();
}

/** AES-256-CTR under the project's key, its IV the ref's HMAC: deterministic, and the IV authenticates the ref when opened. */
export function sealRef(projectId: string, ref: string): string {
  const key = refKey(projectId);
  const iv = createHmac('sha256', key).update(ref).digest().subarray(0, 16);
  const cipher = createCipheriv('aes-256-ctr', key, iv);
  return Buffer.concat([iv, cipher.update(ref, 'utf8'), cipher.final()]).toString('base64url');
}

/** The ref a sealed one stands for, or undefined when it was not sealed under this project's key. */
export function openRef(projectId: string, sealed: string): string | undefined {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length <= 16) return undefined;
  const key = refKey(projectId);
  const iv = raw.subarray(0, 16);
  const decipher = createDecipheriv('aes-256-ctr', key, iv);
  const ref = Buffer.concat([decipher.update(raw.subarray(16)), decipher.final()]).toString('utf8');
  const expected = createHmac('sha256', key).update(ref).digest().subarray(0, 16);
  return timingSafeEqual(expected, iv) ? ref : undefined;
}

export function useTag(projectId: string, marker: Marker): string {
  return `${usePrefix}${projectPseudonym(projectId)}:${marker.specHash}:${sealRef(projectId, marker.ref)}`;
}

export function currentTag(projectId: string, ref: string): string {
  return `${currentPrefix}${projectPseudonym(projectId)}:${sealRef(projectId, ref)}`;
}

/** The first format's ref: `Image/name` written `Image:name` (a `/` would not survive the tag's URL path). */
const legacyRef = (s: string): string => s.replace(':', '/');
const legacyCurrentTag = (projectId: string, ref: string): string => `${currentPrefix}${projectId}:${ref.replace('/', ':')}`;

export interface Use {
  ref: string;
  specHash: string;
  /** The tag as it is on the image (either format). */
  tag: string;
  /** Of the first format (project id and ref in clear). */
  legacy: boolean;
}

/** This project's uses of the version, in either format. */
export function usesBy(img: GlanceImage, projectId: string): Use[] {
  const sealed = `${usePrefix}${projectPseudonym(projectId)}:`;
  const legacy = `${usePrefix}${projectId}:`;
  return (img.tags ?? []).flatMap((tag): Use[] => {
    const isSealed = tag.startsWith(sealed);
    if (!isSealed && !tag.startsWith(legacy)) return [];
    const rest = tag.slice((isSealed ? sealed : legacy).length);
    const at = rest.indexOf(':');
    if (at < 0) return [];
    const ref = isSealed ? openRef(projectId, rest.slice(at + 1)) : legacyRef(rest.slice(at + 1));
    return ref === undefined ? [] : [{ specHash: rest.slice(0, at), ref, tag, legacy: !isSealed }];
  });
}

/** The tags that say this version is current for the manifest, in either format (what a move takes off). */
export function currentTags(projectId: string, ref: string): string[] {
  return [currentTag(projectId, ref), legacyCurrentTag(projectId, ref)];
}

export function isCurrentFor(img: GlanceImage, projectId: string, ref: string): boolean {
  const tags = img.tags ?? [];
  return currentTags(projectId, ref).some((t) => tags.includes(t));
}

/**
 * The first format's tags of this manifest on the image, and the sealed
 * tags that replace them (a legacy current tag becomes a sealed one).
 */
export function resealing(img: GlanceImage, projectId: string, ref: string): { add: string[]; remove: string[] } {
  const uses = usesBy(img, projectId).filter((u) => u.legacy && u.ref === ref);
  const current = legacyCurrentTag(projectId, ref);
  const wasCurrent = (img.tags ?? []).includes(current);
  return {
    add: [...uses.map((u) => useTag(projectId, { owner: '', ref, specHash: u.specHash })), ...(wasCurrent ? [currentTag(projectId, ref)] : [])],
    remove: [...uses.map((u) => u.tag), ...(wasCurrent ? [current] : [])],
  };
}
