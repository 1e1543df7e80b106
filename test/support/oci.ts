import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Readable } from 'node:stream';
import { RegistryClient } from '../../oci/client.ts';
import { staticCredentials } from '../../oci/auth/credentials.ts';
import { sha256Of } from '../../oci/digest.ts';
import { ociManifest } from '../../oci/media-types.ts';
import { putManifest, uploadBuffer } from '../../oci/upload.ts';

/** Test helpers for the OCI registries of the test bed (test/testbed/registry, oci-tools). */

const run = promisify(execFile);

export const registries = {
  plain: '127.0.0.1:5050',
  basic: '127.0.0.1:5051',
  bearer: '127.0.0.1:5052',
  tokenServer: 'http://127.0.0.1:5053',
  user: 'kupenstack',
  password: 'testbed-secret',
  identityToken: 'kupenstack-testbed-identity-token',
} as const;

export const orasBin = join(process.env.KUPENSTACK_TESTBED_CACHE ?? '/var/cache/kupenstack-testbed', 'oras-v1.3.3', 'bin', 'oras');

export async function oras(...args: string[]): Promise<string> {
  if (!existsSync(orasBin)) throw new Error(`oras is not built at ${orasBin}: run test/testbed/oci-tools/up.sh`);
  const { stdout } = await run(orasBin, args, { maxBuffer: 16 << 20 });
  return stdout;
}

export async function skopeo(...args: string[]): Promise<string> {
  const { stdout } = await run('skopeo', args, { maxBuffer: 16 << 20 });
  return stdout;
}

export async function qemuImg(...args: string[]): Promise<void> {
  await run('qemu-img', args);
}

/** A repository name no other test run uses. */
export function uniqueRepo(prefix: string): string {
  return `kupenstack-test/${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'kupenstack-oci-'));
}

export function randomFile(dir: string, name: string, size: number): string {
  const f = join(dir, name);
  writeFileSync(f, randomBytes(size));
  return f;
}

export async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of createReadStream(file) as AsyncIterable<Buffer>) h.update(c);
  return `sha256:${h.digest('hex')}`;
}

/** Reads a whole stream: its sha256, length, and the error it ended with (if any). */
export async function drain(stream: Readable): Promise<{ digest: string; bytes: number; error?: unknown }> {
  const h = createHash('sha256');
  let bytes = 0;
  try {
    for await (const c of stream as AsyncIterable<Buffer>) {
      h.update(c);
      bytes += c.length;
    }
  } catch (error) {
    return { digest: `sha256:${h.digest('hex')}`, bytes, error };
  }
  return { digest: `sha256:${h.digest('hex')}`, bytes };
}

export function client(registry: string = registries.plain, withCredentials = false): RegistryClient {
  return new RegistryClient({
    registry,
    insecure: true,
    ...(withCredentials ? { credentials: staticCredentials(registry, { kind: 'basic', username: registries.user, password: registries.password }) } : {}),
  });
}

export interface RawLayer {
  mediaType: string;
  data: Buffer;
  annotations?: Record<string, string>;
  /** The size the manifest states, when it must lie about `data`'s length. */
  statedSize?: number;
}

/**
 * Pushes an arbitrary manifest (the negative corpus, containerDisks, indexes)
 * with whatever layers and config it is given: the registry stores what we
 * hand it, like a hostile or broken producer would.
 */
export async function pushRaw(
  c: RegistryClient,
  repository: string,
  tag: string,
  parts: { layers: RawLayer[]; config?: { mediaType: string; data: Buffer }; artifactType?: string; annotations?: Record<string, string>; mediaType?: string; layerDigestOverride?: string },
): Promise<string> {
  const config = parts.config ?? { mediaType: 'application/vnd.oci.empty.v1+json', data: Buffer.from('{}') };
  await uploadBuffer(c, repository, config.data);
  const layers = [];
  for (const l of parts.layers) {
    const { digest, size } = await uploadBuffer(c, repository, l.data);
    layers.push({ mediaType: l.mediaType, digest, size: l.statedSize ?? size, ...(l.annotations ? { annotations: l.annotations } : {}) });
  }
  const mediaType = parts.mediaType ?? ociManifest;
  const manifest = {
    schemaVersion: 2,
    mediaType,
    ...(parts.artifactType ? { artifactType: parts.artifactType } : {}),
    config: { mediaType: config.mediaType, digest: sha256Of(config.data), size: config.data.length },
    layers,
    ...(parts.annotations ? { annotations: parts.annotations } : {}),
  };
  return putManifest(c, repository, tag, Buffer.from(JSON.stringify(manifest)), mediaType);
}

export const testbedHome = process.env.KUPENSTACK_TESTBED_HOME ?? '/var/lib/kupenstack-testbed';

/** Where the plain registry keeps a blob's bytes (to corrupt it at rest, as a failing disk would). */
export function plainBlobPath(digest: string): string {
  const hex = digest.slice('sha256:'.length);
  return join(testbedHome, 'registry', 'data-plain', 'docker', 'registry', 'v2', 'blobs', 'sha256', hex.slice(0, 2), hex, 'data');
}
