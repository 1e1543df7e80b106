import { setTimeout as sleep } from 'node:timers/promises';
import { KupenstackError } from '../errors.ts';
import type { ServiceClient } from '../openstack/service.ts';
import type { GlanceImage } from './version-rules.ts';

/**
 * Glance's interoperable import of a staged image (`POST /images/{id}/import`,
 * glance-direct), followed to its end. The import runs as a Glance task:
 * the image goes `uploading` → `importing` → `active`; a failed task (the
 * conversion plugin refusing or qemu-img failing) leaves the image
 * `importing` (Glance 25 does not revert it) or `queued`, with the reason only
 * in the task's message (`GET /images/{id}/tasks`, Glance API 2.12).
 */

/** A Glance task as `GET /images/{id}/tasks` lists it. */
export interface GlanceTask {
  id: string;
  type?: string;
  status: string;
  message?: string;
}

export type ImportState = { state: 'done'; image: GlanceImage } | { state: 'pending'; detail: string } | { state: 'failed'; message: string };

/**
 * Pure: where an import stands, from the image and the task our POST made
 * (undefined when Glance lists no tasks: before 2.12, the image's own
 * `os_glance_failed_import` is all there is).
 */
export function importState(image: GlanceImage | undefined, task: GlanceTask | undefined): ImportState {
  if (!image) return { state: 'failed', message: 'the image was deleted during its import' };
  if (image.status === 'active') return { state: 'done', image };
  if (task?.status === 'failure') return { state: 'failed', message: task.message?.trim() || 'the import task failed without a message' };
  const failedStores = stringProp(image, 'os_glance_failed_import');
  const importing = stringProp(image, 'os_glance_importing_to_stores');
  if (failedStores && !importing) return { state: 'failed', message: `the import to store ${failedStores} failed` };
  if (['killed', 'deleted', 'pending_delete', 'deactivated'].includes(image.status)) return { state: 'failed', message: `the image became ${image.status}` };
  // Back to queued with nothing importing: Glance reverted the import (its staged data is gone).
  if (image.status === 'queued' && !importing && task?.status !== 'pending' && task?.status !== 'processing')
    return { state: 'failed', message: 'Glance reverted the import (the image is queued again)' };
  return { state: 'pending', detail: `image ${image.status}${task ? `, task ${task.status}${task.message ? `: ${task.message}` : ''}` : ''}` };
}

function stringProp(image: GlanceImage, key: string): string {
  const v = image[key];
  return typeof v === 'string' ? v.trim() : '';
}

/** The image's import tasks (none from a Glance before 2.12: 404). */
async function importTasks(image: ServiceClient, id: string, signal?: AbortSignal): Promise<GlanceTask[] | undefined> {
  const res = await image.call<{ tasks?: GlanceTask[] }>('GET', `/images/${id}/tasks`, { ok: [200, 404], ...(signal ? { signal } : {}) });
  if (res.status === 404) return undefined;
  return (res.body.tasks ?? []).filter((t) => t.type === undefined || t.type === 'api_image_import');
}

export interface ImportOptions {
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** First poll after this, doubling to pollMaxMs. */
  pollMs?: number;
  pollMaxMs?: number;
}

/**
 * Starts the glance-direct import of a staged image and waits for its end:
 * the active image, or a KupenstackError `image.import-failed` carrying
 * Glance's message (the caller deletes the image). Our task is the one the
 * POST added (the tasks listed before are set aside).
 */
export async function importStaged(image: ServiceClient, id: string, options: ImportOptions): Promise<GlanceImage> {
  const signal = options.signal;
  const before = new Set((await importTasks(image, id, signal))?.map((t) => t.id) ?? []);
  await image.call('POST', `/images/${id}/import`, { json: { method: { name: 'glance-direct' } }, ok: [202], ...(signal ? { signal } : {}) });
  const deadline = Date.now() + options.timeoutMs;
  let wait = options.pollMs ?? 500;
  for (;;) {
    const [now, tasks] = await Promise.all([image.find<GlanceImage>(`/images/${id}`), importTasks(image, id, signal)]);
    const state = importState(
      now,
      tasks?.find((t) => !before.has(t.id)),
    );
    if (state.state === 'done') return state.image;
    if (state.state === 'failed') throw new KupenstackError('image.import-failed', `Glance's import of image ${id} failed: ${state.message}`);
    if (Date.now() > deadline)
      throw new KupenstackError(
        'image.import-failed',
        `Glance's import of image ${id} did not end within ${Math.round(options.timeoutMs / 1000)} s (${state.detail})`,
      );
    await sleep(wait, undefined, signal ? { signal } : {});
    wait = Math.min(wait * 2, options.pollMaxMs ?? 5_000);
  }
}
