import { describe, expect, it } from 'vitest';
import { refusalOf } from '../../../agent/act/refusals.ts';
import { boundsFrom, type BoundsOptions } from '../../../agent/cli/bounds-options.ts';
import { KupenstackError } from '../../../agent/errors.ts';
import { UsageError } from '../../../agent/errors.ts';
import {
  BoundExceeded,
  boundExceededIn,
  bounds,
  configureBounds,
  deadlineSignal,
  defaultBounds,
  flavorBoundCrossed,
  flavorOver,
  formatSize,
  parseSize,
  runDeadlineExceeded,
  unbounded,
} from '../../../agent/util/bounds.ts';

describe('a process that set no bounds (kupenstack apply, plan)', () => {
  it('bounds no flavor and keeps the limits the code had before', () => {
    expect(flavorBoundCrossed('any', { vcpus: 4096, ram: 4 * 1024 ** 2 })).toBeUndefined();
    expect(bounds()).toEqual(unbounded);
    expect(bounds().imageBytes).toBe(1024 ** 4);
    expect(deadlineSignal(bounds().runDeadlineMs, () => new Error('never')).signal.aborted).toBe(false);
  });
});

describe('sizes', () => {
  it.each([
    ['10GiB', 10 * 1024 ** 3],
    ['512Mi', 512 * 1024 ** 2],
    ['64KiB', 64 * 1024],
    ['1.5G', 1.5e9],
    ['4096', 4096],
    ['0', 0],
  ])('%s is %d bytes', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each(['ten', '10 parsecs', '-1GiB', ''])('%j is not a size', (text) => {
    expect(parseSize(text)).toBeUndefined();
  });

  it('prints sizes as people read them', () => {
    expect([formatSize(12 * 1024 ** 3), formatSize(1.5 * 1024 ** 2), formatSize(300)]).toEqual(['12 GiB', '1.5 MiB', '300 B']);
  });
});

describe('a bound crossed', () => {
  it('names the bound, the value, the limit and the flag', () => {
    const e = new BoundExceeded('image-bytes', '12 GiB', '10 GiB', 'ns/Image/a would bring the namespace over');
    expect(e.code).toBe('bound.image-bytes');
    expect(e.message).toBe('bound.image-bytes: 12 GiB > 10 GiB (--max-namespace-image-bytes): ns/Image/a would bring the namespace over');
  });

  it('is found through the causes a client wraps it in, and makes the object Stalled with reason BoundExceeded', () => {
    const inner = new BoundExceeded('download-rate', '0 B/s', '64 KiB/s', 'GET x', '<');
    const wrapped = new KupenstackError('image.oci-upload', 'the disk was not stored', { cause: new Error('pipeline', { cause: inner }) });
    expect(boundExceededIn(wrapped)).toBe(inner);
    expect(refusalOf(wrapped)).toEqual({ reason: 'BoundExceeded', error: inner });
    expect(inner.message).toContain('bound.download-rate: 0 B/s < 64 KiB/s (--download-min-rate)');
  });

  it('an error without one is no refusal of a bound', () => {
    expect(boundExceededIn(new KupenstackError('image.download', 'GET answered 500'))).toBeUndefined();
    expect(refusalOf(new KupenstackError('image.download', 'GET answered 500'))).toBeUndefined();
  });
});

describe('flavor sizes', () => {
  const limits = { vcpus: 16, ram: 65536, disk: 200, ephemeral: 100, swap: 4096, rxtxFactor: 2 };

  it.each([
    ['vcpus', { vcpus: 64 }, 'bound.flavor-vcpus: 64 > 16 (--max-flavor-vcpus)'],
    ['ram', { ram: 131072 }, 'bound.flavor-ram: 131072 MiB > 65536 MiB (--max-flavor-ram)'],
    ['disk', { disk: 2000 }, 'bound.flavor-disk: 2000 GiB > 200 GiB (--max-flavor-disk)'],
    ['ephemeral', { ephemeral: 101 }, 'bound.flavor-ephemeral: 101 GiB > 100 GiB (--max-flavor-ephemeral)'],
    ['swap', { swap: 8192 }, 'bound.flavor-swap: 8192 MiB > 4096 MiB (--max-flavor-swap)'],
    ['rxtxFactor', { rxtxFactor: 2.5 }, 'bound.flavor-rxtx-factor: 2.5 > 2 (--max-flavor-rxtx-factor)'],
  ])('%s over its bound is refused', (_field, spec, message) => {
    expect(flavorOver({ vcpus: 1, ram: 512, disk: 1, ...spec }, limits)?.message).toContain(message);
  });

  it('a flavor at its bounds passes', () => {
    expect(flavorOver({ vcpus: 16, ram: 65536, disk: 200, ephemeral: 100, swap: 4096, rxtxFactor: 2 }, limits)).toBeUndefined();
  });

  it('holds in every namespace but the exempt (admin) ones', () => {
    configureBounds({ ...defaultBounds, flavor: limits }, (ns) => ns === 'admin');
    try {
      expect(flavorBoundCrossed('tenant', { vcpus: 64 })?.code).toBe('bound.flavor-vcpus');
      expect(flavorBoundCrossed('admin', { vcpus: 64 })).toBeUndefined();
    } finally {
      configureBounds(unbounded);
    }
  });
});

describe('the run deadline', () => {
  it('aborts with the bound once the time is up, and not once cleared', async () => {
    const cut = deadlineSignal(20, () => runDeadlineExceeded('namespace t1', 20));
    const kept = deadlineSignal(20, () => runDeadlineExceeded('namespace t2', 20));
    kept.clear();
    await new Promise((r) => setTimeout(r, 60));
    expect(cut.signal.aborted).toBe(true);
    expect((cut.signal.reason as Error).message).toBe(
      'bound.run-deadline: the run of namespace t1 > 0 s (--run-deadline): abandoned at a safe point (what it wrote is recorded); it runs again with backoff',
    );
    expect(kept.signal.aborted).toBe(false);
  });
});

describe('the bounds flags', () => {
  const flags: BoundsOptions = {
    maxNamespaceImages: '100',
    maxNamespaceImageBytes: '200GiB',
    maxImageBytes: '64GiB',
    maxFlavorVcpus: '64',
    maxFlavorRam: '262144',
    maxFlavorDisk: '2048',
    maxFlavorEphemeral: '1024',
    maxFlavorSwap: '65536',
    maxFlavorRxtxFactor: '10',
    downloadMinRate: '64KiB',
    downloadRateWindow: '1m',
    downloadDeadline: '6h',
    runDeadline: '30m',
    maxGitFetchBytes: '128MiB',
    maxGitBlobBytes: '32MiB',
  };

  it('the flags as their defaults read are the defaults', () => {
    expect(boundsFrom(flags)).toEqual(defaultBounds);
  });

  it.each([
    ['maxNamespaceImageBytes', 'lots', '--max-namespace-image-bytes lots: expected a size'],
    ['maxFlavorVcpus', '-1', '--max-flavor-vcpus -1: expected a number'],
    ['runDeadline', 'soon', '--run-deadline soon: expected a duration'],
    ['maxGitBlobBytes', '0', '--max-git-blob-bytes 0: expected a size'],
  ] as const)('a bad %s is a usage error naming the flag', (key, value, message) => {
    expect(() => boundsFrom({ ...flags, [key]: value })).toThrow(UsageError);
    expect(() => boundsFrom({ ...flags, [key]: value })).toThrow(message);
  });
});
