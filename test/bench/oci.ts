import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pushDisk } from '../../oci/push.ts';
import { RegistryDiskSource } from '../../oci/registry-disk-source.ts';
import { orasBin, tempDir, uniqueRepo } from '../support/oci.ts';
import type { BenchRow } from './table.ts';

/**
 * The registry side of the OCI pipeline on the test bed's registry (5050):
 * push and pull of a random raw disk, beside oras (push, pull) and curl
 * (the physical limit of GET), plus the pull's peak RSS (constant memory).
 */

const sizeMiB = Number(process.env.BENCH_OCI_MIB ?? '256');
const registry = '127.0.0.1:5050';

function mibps(bytes: number, ms: number): string {
  return `${(bytes / 1024 / 1024 / (ms / 1000)).toFixed(0)} MiB/s`;
}

function timed(f: () => void): number {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

export async function benchOci(): Promise<BenchRow[]> {
  const dir = tempDir();
  try {
    const file = join(dir, 'disk.raw');
    const fd = openSync(file, 'w');
    for (let i = 0; i < sizeMiB; i++) writeSync(fd, randomBytes(1024 * 1024));
    closeSync(fd);
    const bytes = sizeMiB * 1024 * 1024;
    const rows: BenchRow[] = [];

    const repo = uniqueRepo('bench');
    let t0 = performance.now();
    const pushed = await pushDisk(file, `${registry}/${repo}:1`, { insecure: true });
    const ourPush = performance.now() - t0;
    const orasPush = timed(() => execFileSync(orasBin, ['push', '--plain-http', `${registry}/${uniqueRepo('bench-oras')}:1`, 'disk.raw:application/vnd.diskimage.raw'], { cwd: dir, stdio: 'ignore' }));
    rows.push({ name: `push ${sizeMiB} MiB raw disk (hash + streamed PATCH)`, ours: mibps(bytes, ourPush), peer: `oras push ${mibps(bytes, orasPush)}`, verdict: ourPush <= orasPush * 1.5 ? 'on par or better' : 'slower than oras' });

    const source = new RegistryDiskSource();
    const resolved = await source.resolve({ repository: `${registry}/${repo}`, tag: '1', insecure: true });
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    t0 = performance.now();
    const opened = await source.open(resolved);
    for await (const chunk of opened.stream as AsyncIterable<Buffer>) void chunk;
    const ourPull = performance.now() - t0;
    clearInterval(sampler);
    const out = join(dir, 'pulled');
    const orasPull = timed(() => execFileSync(orasBin, ['pull', '--plain-http', '-o', out, `${registry}/${repo}:1`], { stdio: 'ignore' }));
    const curl = timed(() => execFileSync('curl', ['-s', '-o', '/dev/null', `http://${registry}/v2/${repo}/blobs/${pushed.layer.digest}`]));
    rows.push({
      name: `pull ${sizeMiB} MiB raw disk (verify sha256, sniff, hold-back)`,
      ours: mibps(bytes, ourPull),
      peer: `oras pull ${mibps(bytes, orasPull)}; curl→/dev/null ${mibps(bytes, curl)}`,
      verdict: ourPull <= orasPull * 1.5 ? 'on par or better' : 'slower than oras',
    });
    const grownMiB = (peak - rssBefore) / 1024 / 1024;
    rows.push({ name: `pull ${sizeMiB} MiB: RSS growth while streaming`, ours: `${grownMiB.toFixed(0)} MiB`, peer: `goal: constant (≪ ${sizeMiB} MiB)`, verdict: grownMiB < sizeMiB / 4 ? 'constant memory' : 'buffers' });

    const gzRepo = uniqueRepo('bench-gz');
    t0 = performance.now();
    await pushDisk(file, `${registry}/${gzRepo}:1`, { insecure: true, compression: 'zstd' });
    const zPush = performance.now() - t0;
    const zResolved = await source.resolve({ repository: `${registry}/${gzRepo}`, tag: '1', insecure: true });
    t0 = performance.now();
    for await (const chunk of (await source.open(zResolved)).stream as AsyncIterable<Buffer>) void chunk;
    const zPull = performance.now() - t0;
    rows.push({ name: `${sizeMiB} MiB raw disk as zstd layer: push / pull (decompress + 2 digests)`, ours: `${mibps(bytes, zPush)} / ${mibps(bytes, zPull)}`, peer: 'Glance ingest ~280 MiB/s (lab)', verdict: zPull > 0 ? 'measured' : '' });
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
