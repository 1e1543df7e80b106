import { afterEach, describe, expect, it } from 'vitest';
import { refusalOf } from '../../agent/act/refusals.ts';
import { KupenstackError } from '../../agent/errors.ts';
import { importStaged, importState, type GlanceTask } from '../../agent/glance/import-task.ts';
import { chooseUpload, configureGlanceDiskFormat, uploadWayFor, type GlanceImportInfo } from '../../agent/glance/raw-target.ts';
import type { GlanceImage } from '../../agent/glance/version-rules.ts';
import { toRemote } from '../../agent/kinds/image/remote.ts';
import type { ServiceClient } from '../../agent/openstack/service.ts';

const cephGlance: GlanceImportInfo = { methods: ['glance-direct', 'web-download'], storeTypes: ['rbd'] };
const fileGlance: GlanceImportInfo = { methods: ['glance-direct', 'web-download'], storeTypes: ['file'] };

describe('how a disk lands in Glance (chooseUpload)', () => {
  it('keeps PUT /file by default where Glance shows no rbd store, or shows no stores to this user', () => {
    expect(chooseUpload('auto', fileGlance, 'qcow2')).toEqual({ way: 'put' });
    expect(chooseUpload('auto', { methods: ['glance-direct'], storeTypes: undefined }, 'qcow2')).toEqual({ way: 'put' });
  });

  it('imports a qcow2 (and the other qemu-img formats) through glance-direct where Glance stores on rbd, or when raw is asked', () => {
    const way = chooseUpload('auto', cephGlance, 'qcow2');
    expect(way.way).toBe('import');
    expect(way.way === 'import' ? way.why : '').toContain('rbd');
    expect(chooseUpload('raw', fileGlance, 'vmdk')).toMatchObject({ way: 'import', why: '--glance-disk-format raw' });
    for (const f of ['vhd', 'vhdx', 'vdi']) expect(chooseUpload('raw', fileGlance, f).way).toBe('import');
  });

  it('puts a raw disk (compressed raw is decompressed on the way) and formats qemu-img does not convert', () => {
    for (const f of ['raw', 'iso', 'ami', 'aki', 'ari']) expect(chooseUpload('raw', cephGlance, f)).toEqual({ way: 'put' });
  });

  it('never converts with keep, even on Ceph', () => {
    expect(chooseUpload('keep', cephGlance, 'qcow2')).toEqual({ way: 'put' });
  });

  it('refuses a qcow2 for a raw cloud without glance-direct, naming the fix', () => {
    const way = chooseUpload('auto', { methods: ['web-download'], storeTypes: ['rbd'] }, 'qcow2');
    expect(way.way).toBe('refuse');
    const reason = way.way === 'refuse' ? way.reason : '';
    expect(reason).toContain("image_import_plugins = ['image_conversion']");
    expect(reason).toContain('output_format = raw');
    expect(reason).toContain('--glance-disk-format keep');
    expect(reason).toContain('web-download');
  });
});

/** A Glance image client that answers from a script: each GET of the image or its tasks takes the next answer. */
function fakeGlance(script: { info?: GlanceImportInfo; images?: Array<GlanceImage | undefined>; tasks?: GlanceTask[][] }): {
  client: ServiceClient;
  calls: string[];
} {
  const calls: string[] = [];
  const images = [...(script.images ?? [])];
  const tasks = [...(script.tasks ?? [])];
  const take = <T>(list: T[]): T => (list.length > 1 ? list.shift()! : list[0]!);
  const call = (method: string, path: string): Promise<{ status: number; body: unknown; headers: Headers }> => Promise.resolve(answer(method, path));
  const answer = (method: string, path: string): { status: number; body: unknown; headers: Headers } => {
    calls.push(`${method} ${path}`);
    const ok = (body: unknown): { status: number; body: unknown; headers: Headers } => ({ status: 200, body, headers: new Headers() });
    if (path === '/info/import') return ok({ 'import-methods': { value: script.info?.methods ?? [] } });
    if (path === '/info/stores/detail')
      return script.info?.storeTypes
        ? ok({ stores: script.info.storeTypes.map((type) => ({ id: type, type })) })
        : { status: 403, body: {}, headers: new Headers() };
    if (path.endsWith('/tasks')) return ok({ tasks: take(tasks) ?? [] });
    if (method === 'POST' && path.endsWith('/import')) return { status: 202, body: {}, headers: new Headers() };
    throw new Error(`unexpected ${method} ${path}`);
  };
  const find = (path: string): Promise<GlanceImage | undefined> => {
    calls.push(`GET ${path}`);
    return Promise.resolve(take(images));
  };
  return { client: { call, find } as unknown as ServiceClient, calls };
}

const img = (status: string, extra: Record<string, unknown> = {}): GlanceImage => ({ id: 'i1', status, ...extra });
const task = (id: string, status: string, message = ''): GlanceTask => ({ id, type: 'api_image_import', status, message });

describe("the import task's state machine (importState)", () => {
  it('is done when the image is active', () => {
    expect(importState(img('active'), task('t', 'success'))).toMatchObject({ state: 'done' });
  });

  it("fails with the task's message when the task failed, whatever the image says (Glance 25 leaves it importing)", () => {
    const s = importState(img('importing', { os_glance_importing_to_stores: 'fs' }), task('t', 'failure', 'Task failed due to Internal Error'));
    expect(s).toEqual({ state: 'failed', message: 'Task failed due to Internal Error' });
  });

  it('fails when a store failed and none is importing (a Glance without the tasks API)', () => {
    expect(importState(img('queued', { os_glance_failed_import: 'fs', os_glance_importing_to_stores: '' }), undefined)).toMatchObject({ state: 'failed' });
  });

  it('fails when the image is gone or reverted to queued with no task running', () => {
    expect(importState(undefined, undefined)).toMatchObject({ state: 'failed' });
    expect(importState(img('queued'), task('t', 'failure'))).toMatchObject({ state: 'failed' });
    expect(importState(img('queued', { os_glance_importing_to_stores: '' }), undefined)).toMatchObject({ state: 'failed' });
  });

  it('is pending while staged, importing, or while the task is pending or processing', () => {
    expect(importState(img('uploading'), undefined)).toMatchObject({ state: 'pending' });
    const s = importState(img('importing', { os_glance_importing_to_stores: 'fs' }), task('t', 'processing', 'Copied 64 MiB'));
    expect(s.state).toBe('pending');
    expect(s.state === 'pending' ? s.detail : '').toContain('Copied 64 MiB');
    expect(importState(img('queued'), task('t', 'pending'))).toMatchObject({ state: 'pending' });
  });
});

describe('importStaged (POST import, then polls to the end)', () => {
  it('posts glance-direct and polls until the image is active', async () => {
    const g = fakeGlance({ images: [img('uploading'), img('importing'), img('active', { disk_format: 'raw' })], tasks: [[], [task('t1', 'processing')]] });
    const done = await importStaged(g.client, 'i1', { timeoutMs: 5_000, pollMs: 1, pollMaxMs: 2 });
    expect(done).toMatchObject({ status: 'active', disk_format: 'raw' });
    expect(g.calls).toContain('POST /images/i1/import');
    expect(g.calls.filter((c) => c === 'GET /images/i1').length).toBe(3);
  });

  it("sets aside tasks listed before its POST: an older failed import is not this one's failure", async () => {
    const g = fakeGlance({
      images: [img('importing'), img('active')],
      tasks: [[task('old', 'failure', 'old')], [task('old', 'failure', 'old'), task('new', 'processing')]],
    });
    await expect(importStaged(g.client, 'i1', { timeoutMs: 5_000, pollMs: 1 })).resolves.toMatchObject({ status: 'active' });
  });

  it("fails with Glance's message as image.import-failed", async () => {
    const g = fakeGlance({ images: [img('importing')], tasks: [[], [task('t1', 'failure', 'Task failed due to Internal Error')]] });
    const err = await importStaged(g.client, 'i1', { timeoutMs: 5_000, pollMs: 1 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'image.import-failed' });
    expect((err as Error).message).toContain('Task failed due to Internal Error');
  });

  it('gives up after its deadline, saying where the import stood', async () => {
    const g = fakeGlance({ images: [img('importing')], tasks: [[], [task('t1', 'processing')]] });
    const err = await importStaged(g.client, 'i1', { timeoutMs: 5, pollMs: 2 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'image.import-failed' });
    expect((err as Error).message).toContain('did not end');
  });
});

describe('uploadWayFor (the setting, Glance asked only when it matters)', () => {
  afterEach(() => configureGlanceDiskFormat('auto'));

  it('asks nothing for a raw disk or with keep', async () => {
    const g = fakeGlance({ info: cephGlance });
    expect(await uploadWayFor(g.client, 'raw')).toEqual({ way: 'put' });
    configureGlanceDiskFormat('keep');
    expect(await uploadWayFor(g.client, 'qcow2')).toEqual({ way: 'put' });
    expect(g.calls).toEqual([]);
  });

  it('detects Ceph from the stores, and refuses with image.no-conversion where Glance cannot convert', async () => {
    expect((await uploadWayFor(fakeGlance({ info: cephGlance }).client, 'qcow2')).way).toBe('import');
    expect((await uploadWayFor(fakeGlance({ info: { methods: ['glance-direct'], storeTypes: undefined } }).client, 'qcow2')).way).toBe('put');
    configureGlanceDiskFormat('raw');
    await expect(uploadWayFor(fakeGlance({ info: { methods: [], storeTypes: ['file'] } }).client, 'qcow2')).rejects.toMatchObject({
      code: 'image.no-conversion',
    });
  });
});

describe('a version Glance converted to raw is no drift from the manifest', () => {
  it('shows the pushed format as disk_format, and the bookkeeping property is not a user property', () => {
    const remote = toRemote({ id: 'i1', status: 'active', disk_format: 'raw', oci_manifest_digest: 'sha256:x', oci_source_disk_format: 'qcow2' });
    expect(remote.fields.disk_format).toBe('qcow2');
    expect(remote.fields.properties).not.toHaveProperty('oci_source_disk_format');
    expect(toRemote({ id: 'i2', status: 'active', disk_format: 'raw' }).fields.disk_format).toBe('raw');
  });
});

describe('a disk Glance cannot make raw is Stalled (a retry cannot fix it)', () => {
  it('names ConversionFailed for each conversion refusal', () => {
    for (const code of ['image.no-conversion', 'image.not-converted', 'image.import-failed'])
      expect(refusalOf(new KupenstackError(code, 'x'))?.reason).toBe('ConversionFailed');
    expect(refusalOf(new KupenstackError('image.oci-upload', 'x'))).toBeUndefined();
  });
});
