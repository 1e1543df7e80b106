import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceClient } from '../openstack/service.ts';

/**
 * Glance v2 image members: how one image is seen by several projects.
 * The agent is admin: it adds a project and accepts on the project's behalf
 * (an admin may set a member's status), so the image shows in the
 * project's default list without anyone in the project acting.
 */

export type MemberStatus = 'pending' | 'accepted' | 'rejected';

interface Member {
  member_id: string;
  status: MemberStatus;
}

/** The project's membership of the image, or undefined when it is none. */
export async function memberStatus(image: ServiceClient, imageId: string, projectId: string): Promise<MemberStatus | undefined> {
  return (await image.find<Member>(`/images/${imageId}/members/${projectId}`))?.status;
}

/** Adds the project (409: already a member) and accepts for it; idempotent, so a retried share after kill -9 is harmless. */
export async function share(image: ServiceClient, imageId: string, projectId: string, signal?: AbortSignal): Promise<void> {
  await image.call('POST', `/images/${imageId}/members`, { json: { member: projectId }, ok: [200, 409], signal });
  await image.call('PUT', `/images/${imageId}/members/${projectId}`, { json: { status: 'accepted' }, ok: [200], signal });
}

/** Takes the project off the image (404: it was not a member). */
export async function unshare(image: ServiceClient, imageId: string, projectId: string, signal?: AbortSignal): Promise<void> {
  await image.call('DELETE', `/images/${imageId}/members/${projectId}`, { ok: [204, 404], signal });
}

/**
 * One tag on, one tag off (a PATCH of /tags would replace the whole set).
 * Glance itself reads, changes and writes the whole tag set on each call, so
 * two calls on one image at once can undo one another: callers queue their
 * changes per image, and `settleTags` checks the outcome.
 */
async function addTag(image: ServiceClient, imageId: string, tag: string, signal?: AbortSignal): Promise<void> {
  await image.call('PUT', `/images/${imageId}/tags/${encodeURIComponent(tag)}`, { ok: [204], signal });
}

async function removeTag(image: ServiceClient, imageId: string, tag: string, signal?: AbortSignal): Promise<void> {
  await image.call('DELETE', `/images/${imageId}/tags/${encodeURIComponent(tag)}`, { ok: [204, 404], signal });
}

/**
 * Adds and removes tags until Glance shows the outcome (another process's
 * tag call on the same image at the same moment can undo ours: Glance
 * writes whole tag sets). Bounded: a change still lost is made by the next run.
 */
export async function settleTags(
  image: ServiceClient,
  imageId: string,
  change: { add?: readonly string[]; remove?: readonly string[] },
  signal?: AbortSignal,
): Promise<void> {
  const add = change.add ?? [];
  const remove = change.remove ?? [];
  for (let attempt = 0; attempt < 5; attempt++) {
    for (const t of add) await addTag(image, imageId, t, signal);
    for (const t of remove) await removeTag(image, imageId, t, signal);
    const tags = new Set((await image.find<{ tags?: string[] }>(`/images/${imageId}`))?.tags ?? []);
    if (add.every((t) => tags.has(t)) && remove.every((t) => !tags.has(t))) return;
    await sleep(50 + Math.floor(Math.random() * 200), undefined, signal ? { signal } : {});
  }
}
