import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { request } from 'undici';
import type { DiskPackaging } from '../../../oci/disk-source.ts';

/**
 * Real artifacts in the real test-bed registry (127.0.0.1:5050), pushed
 * over the distribution API the way oras, podman and buildah push them:
 * the four packagings the Image kind must import.
 */

export const registry = '127.0.0.1:5050';
const sha256 = (b: Buffer | string): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/**
 * A small qcow2 (64 MiB virtual) whose first MiB (or `randomMiB`) is random: every call gives
 * a blob no other test has, so the registry's content-addressed storage is
 * never shared between tests (a test that corrupts its blob harms only itself).
 */
export function qcow2Disk(randomMiB = 1): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'ks-oci-disk-'));
  try {
    const raw = Buffer.alloc(64 * 1024 * 1024);
    randomBytes(randomMiB * 1024 * 1024).copy(raw);
    writeFileSync(join(dir, 'd.raw'), raw);
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', join(dir, 'd.raw'), join(dir, 'd.qcow2')]);
    return readFileSync(join(dir, 'd.qcow2'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A qcow2 that names a backing file: must never reach Glance. */
export function backedQcow2(): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'ks-oci-disk-'));
  try {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', '/etc/hostname', '-F', 'raw', join(dir, 'b.qcow2')]);
    return readFileSync(join(dir, 'b.qcow2'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Where pushes go: the plain registry, or another (the Basic-auth one) with its credentials. */
export const target = { registry, auth: undefined as string | undefined };

async function http(method: string, url: string, body?: Buffer | string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const res = await request(url, { method: method as 'GET', body, headers: { ...headers, ...(target.auth ? { authorization: target.auth } : {}) } });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

export async function pushBlob(repo: string, data: Buffer): Promise<{ digest: string; size: number }> {
  const digest = sha256(data);
  if ((await http('HEAD', `http://${target.registry}/v2/${repo}/blobs/${digest}`)).status === 200) return { digest, size: data.length };
  const start = await http('POST', `http://${target.registry}/v2/${repo}/blobs/uploads/`);
  const location = new URL(String(start.headers.location), `http://${target.registry}`).toString();
  const put = await http('PUT', `${location}${location.includes('?') ? '&' : '?'}digest=${encodeURIComponent(digest)}`, data, { 'content-type': 'application/octet-stream' });
  if (put.status !== 201) throw new Error(`blob push answered ${put.status}: ${put.text}`);
  return { digest, size: data.length };
}

export async function pushManifest(repo: string, tag: string, manifest: Record<string, unknown>): Promise<string> {
  const body = JSON.stringify(manifest);
  const res = await http('PUT', `http://${target.registry}/v2/${repo}/manifests/${tag}`, body, { 'content-type': String(manifest.mediaType) });
  if (res.status !== 201) throw new Error(`manifest push answered ${res.status}: ${res.text}`);
  return sha256(body);
}

export interface TarEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link';
  linkname?: string;
  data?: Buffer;
}

/** A containerDisk layer: disk/<name> owned by uid 107, gzipped tar (or the entries given, for refusals). */
async function containerDiskLayer(disk: Buffer, name: string, entries?: TarEntry[]): Promise<Buffer> {
  const p = pack();
  const list: TarEntry[] = entries ?? [
    { name: 'disk/', type: 'directory' },
    { name: `disk/${name}`, data: disk },
  ];
  for (const e of list) {
    const type = e.type ?? 'file';
    const header = { name: e.name, type, uid: 107, gid: 107, mode: type === 'directory' ? 0o755 : 0o644, ...(e.linkname ? { linkname: e.linkname } : {}), ...(type === 'file' ? { size: e.data?.length ?? 0 } : {}) };
    if (type === 'file') p.entry(header, e.data ?? Buffer.alloc(0));
    else p.entry(header);
  }
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

const empty = { mediaType: 'application/vnd.oci.empty.v1+json', digest: sha256('{}'), size: 2, data: 'e30=' };

/** Pushes `disk` (qcow2) as `repo:tag` in one of the four packagings; returns the manifest digest. */
export async function pushDiskAs(packaging: DiskPackaging, repo: string, tag: string, disk: Buffer, annotations: Record<string, string> = {}, entries?: TarEntry[]): Promise<string> {
  const title = { 'org.opencontainers.image.title': 'disk.qcow2' };
  switch (packaging) {
    case 'kupenstack-artifact': {
      await pushBlob(repo, Buffer.from('{}'));
      const layer = await pushBlob(repo, disk);
      return pushManifest(repo, tag, {
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        artifactType: 'application/vnd.kupenstack.vmimage.v1',
        config: empty,
        layers: [{ mediaType: 'application/vnd.diskimage.qcow2', ...layer, annotations: title }],
        annotations: { 'io.kupenstack.vmimage.disk-format': 'qcow2', ...annotations },
      });
    }
    case 'diskimage-artifact': {
      // Konflux / podman style: no KupenStack artifactType, one application/vnd.diskimage.* layer.
      await pushBlob(repo, Buffer.from('{}'));
      const layer = await pushBlob(repo, disk);
      return pushManifest(repo, tag, {
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        artifactType: 'application/vnd.diskimage.qcow2',
        config: empty,
        layers: [{ mediaType: 'application/vnd.diskimage.qcow2', ...layer, annotations: title }],
      });
    }
    case 'oras-file': {
      // `oras push repo:tag disk.qcow2`: generic layer type, titled, unknown artifact type.
      await pushBlob(repo, Buffer.from('{}'));
      const layer = await pushBlob(repo, disk);
      return pushManifest(repo, tag, {
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        artifactType: 'application/vnd.unknown.artifact.v1',
        config: empty,
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer, annotations: title }],
        annotations: { 'org.opencontainers.image.created': '2026-11-22T00:00:00Z' },
      });
    }
    case 'containerdisk': {
      const tarGz = await containerDiskLayer(disk, 'disk.qcow2', entries);
      const layer = await pushBlob(repo, tarGz);
      const diffId = sha256(gunzipped(tarGz));
      const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [diffId] }, config: {} }));
      const cfg = await pushBlob(repo, config);
      return pushManifest(repo, tag, {
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...cfg },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...layer }],
      });
    }
    case 'kubevirt-export':
      // KubeVirt's disks are raw: the bytes as given, one disk named rootdisk.
      return (await pushKubevirtAs(repo, tag, [{ name: 'rootdisk', data: disk }])).manifest;
  }
}

/** One disk of a KubeVirt VM export: its bytes (raw), and the size annotation to write when not the true one. */
export interface KubevirtDiskIn {
  name: string;
  data: Buffer;
  sizeAnnotation?: string;
}

/** zstd as KubeVirt's exporter makes it: the real `zstd` binary when the machine has it, else Node's zlib. */
export function zstdCompress(data: Buffer): Buffer {
  try {
    return execFileSync('zstd', ['-q', '-c', '-3'], { input: data, maxBuffer: 1 << 30 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return zstdCompressSync(data);
  }
}

/**
 * A KubeVirt VM export (VEP #256) pushed over the registry API as `oras cp` of a
 * `virtctl vmexport download --format=oci` archive leaves it: an index with
 * artifactType application/vnd.kubevirt.virtualmachine.v1 naming one amd64
 * manifest, the VirtualMachine as config, one raw+zstd layer per disk with
 * io.kubevirt.disk.name / io.kubevirt.disk.size (a quantity: 64Mi).
 */
export async function pushKubevirtAs(repo: string, tag: string, disks: KubevirtDiskIn[]): Promise<{ index: string; manifest: string }> {
  const quantity = (n: number): string => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)}Mi` : String(n));
  const layers = [];
  for (const d of disks) {
    const blob = await pushBlob(repo, zstdCompress(d.data));
    layers.push({
      mediaType: 'application/vnd.kubevirt.disk.raw+zstd',
      ...blob,
      annotations: { 'io.kubevirt.disk.name': d.name, 'io.kubevirt.disk.size': d.sizeAnnotation ?? quantity(d.data.length), 'org.opencontainers.image.title': `${d.name}.raw.zst` },
    });
  }
  const vm = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: 'exported' },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: {
          domain: { devices: { disks: disks.map((d) => ({ name: d.name, disk: { bus: 'virtio' } })) }, resources: { requests: { memory: '128Mi' } } },
          volumes: disks.map((d) => ({ name: d.name, persistentVolumeClaim: { claimName: `${d.name}-exported` } })),
        },
      },
    },
  };
  const config = await pushBlob(repo, Buffer.from(JSON.stringify(vm)));
  const manifestBody = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    artifactType: 'application/vnd.kubevirt.virtualmachine.v1',
    config: { mediaType: 'application/vnd.kubevirt.virtualmachine.config.v1+json', ...config },
    layers,
  };
  const manifest = await pushManifest(repo, sha256(JSON.stringify(manifestBody)), manifestBody);
  const index = await pushManifest(repo, tag, {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    artifactType: 'application/vnd.kubevirt.virtualmachine.v1',
    manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: manifest, size: Buffer.byteLength(JSON.stringify(manifestBody)), platform: { architecture: 'amd64', os: 'linux' } }],
    annotations: { 'org.opencontainers.image.created': '2026-12-06T00:00:00Z' },
  });
  return { index, manifest };
}

function gunzipped(b: Buffer): Buffer {
  return execFileSync('gzip', ['-dc'], { input: b, maxBuffer: 1 << 30 });
}

/** Flips one byte of a stored blob in the registry's storage (same size): served unverified, as a disk rot would be. */
export function corruptBlobAtRest(digest: string): void {
  const hex = digest.replace('sha256:', '');
  const file = join(process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed', 'registry', 'data-plain', 'docker', 'registry', 'v2', 'blobs', 'sha256', hex.slice(0, 2), hex, 'data');
  const data = readFileSync(file);
  const at = Math.floor(data.length / 2);
  data[at] = data[at]! ^ 0xff;
  writeFileSync(file, data);
}

/**
 * Blob GETs for a repository in the registry's access log since a byte
 * offset (an independent count of transfers): whole downloads (200), and
 * the bytes of partial ones (206: resolve's pre-flight read of the disk head).
 */
export function blobGets(repo: string, since: number): { count: number; partialBytes: number; end: number } {
  const text = readFileSync(registryLog(), 'latin1').slice(since);
  const re = new RegExp(`"GET /v2/${repo.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/blobs/sha256:[0-9a-f]{64} HTTP/1.1" (20[06]) (\\d+)`, 'g');
  let count = 0;
  let partialBytes = 0;
  for (const m of text.matchAll(re)) {
    if (m[1] === '200') count++;
    else partialBytes += Number(m[2]);
  }
  return { count, partialBytes, end: since + text.length };
}

export function registryLog(): string {
  return join(process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed', 'registry', 'log', 'registry.log');
}

export type Fault = 'none' | 'truncate-always' | 'truncate-once' | 'truncate-then-5xx';

/** One blob download the fault proxy saw: the Range it asked for (absent: the whole blob), what it answered, whether it cut the body. */
export interface ProxiedBlob {
  range: string | undefined;
  status: number;
  cut: boolean;
}

/**
 * A loopback HTTP middlebox in front of the real registry that breaks blob
 * downloads mid-way: cut the body half way (the connection dies), or answer
 * 503 to the resumption. Manifests and everything else pass through untouched.
 * `set` starts a new activation: the fault counts from the next blob GET, and
 * `blobs()` lists the downloads of this activation only, as seen on the wire.
 */
export async function faultProxy(): Promise<{ host: string; set: (f: Fault) => void; blobs: () => ProxiedBlob[]; close: () => Promise<void> }> {
  const { createServer, request: forward } = await import('node:http');
  let fault: Fault = 'none';
  let seen: ProxiedBlob[] = [];
  const server = createServer((req, res) => {
    // The downloads of the disk itself: a whole blob, or its resumption (`bytes=N-`); a pre-flight read of the head (`bytes=0-65535`) passes.
    const range = req.headers.range;
    const preflight = /^bytes=\d+-\d+$/.test(String(range ?? ''));
    const isBlob = /\/blobs\/sha256:[0-9a-f]{64}$/.test(req.url ?? '') && req.method === 'GET' && !preflight;
    const entry: ProxiedBlob = { range, status: 0, cut: false };
    if (isBlob) seen.push(entry);
    const nth = seen.length;
    if (isBlob && fault === 'truncate-then-5xx' && nth > 1) {
      entry.status = 503;
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"errors":[{"code":"UNAVAILABLE","message":"injected"}]}');
      return;
    }
    const up = forward({ host: '127.0.0.1', port: 5050, method: req.method, path: req.url, headers: { ...req.headers, host: registry } }, (upRes) => {
      const cut = isBlob && (fault === 'truncate-always' || ((fault === 'truncate-once' || fault === 'truncate-then-5xx') && nth === 1));
      entry.status = upRes.statusCode ?? 502;
      entry.cut = cut;
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      if (!cut) return void upRes.pipe(res);
      const limit = Math.floor(Number(upRes.headers['content-length'] ?? 0) / 2);
      let sent = 0;
      upRes.on('data', (chunk: Buffer) => {
        if (sent >= limit) return;
        const part = chunk.subarray(0, limit - sent);
        sent += part.length;
        res.write(part);
        if (sent >= limit) {
          upRes.destroy();
          res.destroy();
        }
      });
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    host: `127.0.0.1:${port}`,
    set: (f) => {
      fault = f;
      seen = [];
    },
    blobs: () => [...seen],
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
