import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import type { ResolvedDisk } from '../../oci/disk-source.ts';
import { cronPassed, resolveDue } from '../../agent/kinds/image/oci-poll.ts';
import { HoldBackLast } from '../../lib/stream/hold-back.ts';
import { formatRequest as referenceOf } from '../../oci/reference.ts';
import {
  currentVersion,
  globMatch,
  ociImageId,
  retentionVictims,
  staleVersions,
  versionName,
  versionProperties,
  type GlanceImage,
} from '../../agent/glance/version-rules.ts';

const d1 = `sha256:${'a'.repeat(64)}`;
const d2 = `sha256:${'b'.repeat(64)}`;

const disk = (over: Partial<ResolvedDisk> = {}): ResolvedDisk => ({
  reference: `127.0.0.1:5050/vm/cirros@${d1}`,
  repository: '127.0.0.1:5050/vm/cirros',
  tag: '0.6',
  manifestDigest: d1,
  packaging: 'kupenstack-artifact',
  diskFormat: 'qcow2',
  blob: { digest: d2, size: 10, mediaType: 'application/vnd.diskimage.qcow2' },
  annotations: {},
  properties: { os_distro: 'cirros', hw_disk_bus: 'virtio', img_config_drive: 'mandatory', oci_manifest_digest: 'forged', kupenstack_owner: 'forged' },
  ...over,
});

const v = (id: string, over: Partial<GlanceImage> = {}): GlanceImage => ({ id, status: 'active', created_at: '2026-01-01T00:00:00Z', tags: [], ...over });

describe('OCI version identity', () => {
  it('derives one id per project and digest, and a new one per deletion attempt', () => {
    expect(ociImageId('p1', d1)).toBe(ociImageId('p1', d1));
    expect(ociImageId('p1', d1)).not.toBe(ociImageId('p2', d1));
    expect(ociImageId('p1', d1)).not.toBe(ociImageId('p1', d2));
    expect(ociImageId('p1', d1, 1)).not.toBe(ociImageId('p1', d1));
    expect(ociImageId('p1', d1)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('names older versions name@sha256:<12 hex>', () => {
    expect(versionName('cirros', d1)).toBe('cirros@sha256:aaaaaaaaaaaa');
  });

  it('names the followed reference', () => {
    expect(referenceOf({ repository: 'r/x', tag: '1' })).toBe('r/x:1');
    expect(referenceOf({ repository: 'r/x', digest: d1 })).toBe(`r/x@${d1}`);
    expect(referenceOf({ repository: 'r/x', semver: '~1.2' })).toBe('r/x:~1.2');
  });
});

describe('version properties', () => {
  it('lets through only allowed artifact properties, the user wins, the pipeline keys cannot be forged', () => {
    expect(globMatch('hw_*', 'hw_disk_bus')).toBe(true);
    expect(globMatch('hw_*', 'xhw_disk_bus')).toBe(false);
    expect(globMatch('os_distro', 'os_distro')).toBe(true);
    expect(globMatch('os.distro', 'os_distro')).toBe(false);
    expect(versionProperties(disk(), [], {})).toEqual({ oci_repository: '127.0.0.1:5050/vm/cirros', oci_tag: '0.6', oci_manifest_digest: d1 });
    expect(versionProperties(disk(), ['hw_*', 'os_*', 'oci_*', 'kupenstack_*'], { os_distro: 'mine' })).toEqual({
      hw_disk_bus: 'virtio',
      os_distro: 'mine',
      oci_repository: '127.0.0.1:5050/vm/cirros',
      oci_tag: '0.6',
      oci_manifest_digest: d1,
    });
    const pinned = versionProperties(disk({ tag: undefined }), [], {});
    expect(pinned).not.toHaveProperty('oci_tag');
  });
});

describe('current version', () => {
  it('is the shown one promoted last, else the newest shown, else the newest', () => {
    const old = v('old', { oci_promoted_at: '2026-01-01T00:00:00Z', created_at: '2026-01-01T00:00:00Z' });
    const next = v('new', { oci_promoted_at: '2026-01-02T00:00:00Z', created_at: '2026-01-02T00:00:00Z' });
    expect(currentVersion([old, next])!.id).toBe('new');
    // A crash after creating the new version hidden: the old one stays current.
    expect(currentVersion([old, { ...next, os_hidden: true, oci_promoted_at: undefined }])!.id).toBe('old');
    expect(currentVersion([{ ...old, os_hidden: true }, { ...next, os_hidden: true }])!.id).toBe('new');
    expect(currentVersion([])).toBeUndefined();
  });

  it('lists the other versions that still look current', () => {
    const list = [v('cur'), v('shown'), v('tagged', { os_hidden: true, tags: ['oci-tag:1'] }), v('hidden', { os_hidden: true, tags: ['x'] })];
    expect(staleVersions(list, 'cur').map((x) => x.id)).toEqual(['shown', 'tagged']);
  });
});

describe('retention', () => {
  const at = (day: number): string => `2026-01-${String(day).padStart(2, '0')}T00:00:00Z`;
  const hidden = (id: string, day: number, over: Partial<GlanceImage> = {}): GlanceImage => v(id, { os_hidden: true, created_at: at(day), ...over });

  it('keeps the current plus keep-1 newest, deletes only hidden, untagged, unprotected, unused versions', () => {
    const versions = [v('cur', { created_at: at(9) }), hidden('h8', 8), hidden('h7', 7), hidden('h6', 6), hidden('prot', 5, { protected: true }), hidden('used', 4), hidden('tagged', 3, { tags: ['oci-tag:old'] }), v('shown', { created_at: at(2) }), hidden('h1', 1)];
    expect(retentionVictims(versions, 'cur', 3, new Set(['used'])).map((x) => x.id)).toEqual(['h6', 'h1']);
    expect(retentionVictims(versions, 'cur', 1, new Set()).map((x) => x.id)).toEqual(['h8', 'h7', 'h6', 'used', 'h1']);
    expect(retentionVictims(versions, 'cur', 100, new Set())).toEqual([]);
  });

  it('orders versions made in the same second by when they were promoted, not by their random ids', () => {
    // Glance's created_at has whole seconds: four versions of a fast tag-move loop can share one.
    const promoted = (id: string, ms: number): GlanceImage => hidden(id, 5, { oci_promoted_at: new Date(Date.UTC(2026, 0, 5, 0, 0, 0, ms)).toISOString() });
    const versions = [v('cur', { created_at: at(5), oci_promoted_at: new Date(Date.UTC(2026, 0, 5, 0, 0, 0, 900)).toISOString() }), promoted('ffff-newer', 600), promoted('0000-older', 300)];
    expect(retentionVictims(versions, 'cur', 2, new Set()).map((x) => x.id)).toEqual(['0000-older']);
  });

  it('orders demoted versions made in the same second by when they were superseded: demote drops the promote stamp', () => {
    // What a keep-2 loop of four fast pushes leaves: v1 and v2 demoted within one second of their creation.
    const ms = (n: number): string => new Date(Date.UTC(2026, 0, 5, 0, 0, 0, n)).toISOString();
    const demoted = (id: string, supersededMs: number): GlanceImage => hidden(id, 5, { oci_superseded_at: ms(supersededMs) });
    const versions = [v('cur', { created_at: at(5), oci_promoted_at: ms(900) }), demoted('ffff-v2', 900), demoted('0000-v1', 600), demoted('8888-v0', 300)];
    expect(retentionVictims(versions, 'cur', 2, new Set(['8888-v0'])).map((x) => x.id)).toEqual(['0000-v1']);
    // A version demoted, promoted again (a rollback) and current: the other one is now the newest demoted.
    expect(retentionVictims([v('0000-v1', { created_at: at(5), oci_promoted_at: ms(950) }), demoted('ffff-v2', 950), demoted('8888-v0', 300)], '0000-v1', 2, new Set()).map((x) => x.id)).toEqual(['8888-v0']);
  });

  it('never deletes the current version, even when it is the oldest', () => {
    const versions = [v('cur', { created_at: at(1), os_hidden: true }), hidden('h2', 2), hidden('h3', 3)];
    expect(retentionVictims(versions, 'cur', 1, new Set()).map((x) => x.id)).toEqual(['h3', 'h2']);
  });
});

describe('tag polling', () => {
  it('re-resolves every run without a policy, after the interval, or after a cron time passed', () => {
    const t = Date.parse('2026-01-01T05:59:30Z');
    expect(resolveDue(undefined, t, { interval: '1h' })).toBe(true);
    expect(resolveDue(t, t + 1000, {})).toBe(true);
    expect(resolveDue(t, t + 59 * 60_000, { interval: '1h' })).toBe(false);
    expect(resolveDue(t, t + 60 * 60_000, { interval: '1h' })).toBe(true);
    expect(resolveDue(t, t + 20_000, { schedule: '0 */6 * * *' })).toBe(false);
    expect(resolveDue(t, t + 40_000, { schedule: '0 */6 * * *' })).toBe(true);
    expect(cronPassed('@daily', t, t + 3600_000)).toBe(false);
    expect(cronPassed('@daily', t, t + 24 * 3600_000)).toBe(true);
    expect(() => cronPassed('not a cron', t, t + 1)).toThrow(/not a cron expression/);
  });
});

describe('HoldBackLast', () => {
  it('passes every byte, the last chunk only at the end', async () => {
    const seen: number[] = [];
    const hb = new HoldBackLast();
    const chunks = [Buffer.alloc(3, 1), Buffer.alloc(4, 2), Buffer.alloc(5, 3)];
    let out = 0;
    await pipeline(
      Readable.from(chunks),
      hb,
      new Writable({
        write(c: Buffer, _e, cb) {
          out += c.length;
          seen.push(hb.bytes);
          cb();
        },
      }),
    );
    expect(out).toBe(12);
    expect(hb.bytes).toBe(12);
    expect(seen).toEqual([3, 7, 12]);
  });

  it('gathers small chunks up to the chunk size, still holding the last one back', async () => {
    const sizes: number[] = [];
    const hb = new HoldBackLast(undefined, 10);
    await pipeline(
      Readable.from([3, 4, 5, 6, 7, 2].map((n) => Buffer.alloc(n, n))),
      hb,
      new Writable({
        write(c: Buffer, _e, cb) {
          sizes.push(c.length);
          cb();
        },
      }),
    );
    expect(sizes).toEqual([12, 13, 2]);
    expect(hb.bytes).toBe(27);
  });

  it('never hands out the last chunk when the source fails before its end', async () => {
    function* failing(): Generator<Buffer> {
      yield Buffer.alloc(3, 1);
      yield Buffer.alloc(4, 2);
      throw new Error('digest mismatch');
    }
    let out = 0;
    await expect(
      pipeline(
        Readable.from(failing()),
        new HoldBackLast(),
        new Writable({
          write(c: Buffer, _e, cb) {
            out += c.length;
            cb();
          },
        }),
      ),
    ).rejects.toThrow('digest mismatch');
    expect(out).toBe(3);
  });
});

describe('HoldBackLast with a check at the end (the URL upload\'s sha256)', () => {
  it('withholds the last chunk when the check refuses, and hands out everything when it passes', async () => {
    class Refusing extends HoldBackLast {
      refuse = true;
      protected override check(): Error | undefined {
        return this.refuse ? new Error('sha256 mismatch') : undefined;
      }
    }
    const run = async (refuse: boolean): Promise<{ out: number; err?: unknown }> => {
      const hb = new Refusing();
      hb.refuse = refuse;
      let out = 0;
      const err = await pipeline(
        Readable.from([Buffer.alloc(3, 1), Buffer.alloc(4, 2), Buffer.alloc(5, 3)]),
        hb,
        new Writable({
          write(c: Buffer, _e, cb) {
            out += c.length;
            cb();
          },
        }),
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      return { out, ...(err ? { err } : {}) };
    };
    expect(await run(false)).toEqual({ out: 12 });
    const refused = await run(true);
    expect(refused.out).toBe(7);
    expect(refused.err).toMatchObject({ message: 'sha256 mismatch' });
  });
});
