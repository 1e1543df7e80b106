import { openBlob } from './blob.ts';
import { header, type RegistryClient } from './client.ts';
import type { Descriptor } from './manifest.ts';
import { pullScope } from './manifest.ts';
import { blobExists, uploadStream } from './upload.ts';

/**
 * One blob from a repository to another, the cheapest way that works:
 * nothing when DST has it (HEAD); a cross-repository mount when both are on
 * the same registry (`POST …/uploads/?mount=<digest>&from=<repo>`, no byte
 * moves); else a GET streamed into an upload (blob.ts verifies the digest as
 * the bytes pass, upload.ts sends them on: memory stays constant whatever
 * the size, and the registry checks the digest again at the closing PUT).
 */

export type BlobCopy = 'present' | 'mounted' | 'copied';

export interface BlobEnd {
  client: RegistryClient;
  repository: string;
}

export async function copyBlob(
  src: BlobEnd,
  dst: BlobEnd,
  blob: Descriptor,
  options: { signal?: AbortSignal; onBytes?: (n: number) => void } = {},
): Promise<BlobCopy> {
  const { signal } = options;
  if (await blobExists(dst.client, dst.repository, blob.digest, signal)) return 'present';
  if (src.client.registry === dst.client.registry && (await mount(src, dst, blob.digest, signal))) return 'mounted';
  const body = openBlob(src.client, src.repository, blob, { signal, ...(options.onBytes ? { onBytes: options.onBytes } : {}) });
  try {
    await uploadStream(dst.client, dst.repository, body, { digest: blob.digest, ...(signal ? { signal } : {}) });
  } finally {
    body.destroy();
  }
  return 'copied';
}

/**
 * A cross-repository mount: 201 when the registry linked the blob; 202 when
 * it declined (no access to the source repository, or no mount support) and
 * opened an upload session instead, which is cancelled (the copy goes on by
 * streaming).
 */
async function mount(src: BlobEnd, dst: BlobEnd, digest: string, signal: AbortSignal | undefined): Promise<boolean> {
  const query = `mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(src.repository)}`;
  const res = await dst.client.send('POST', `/v2/${dst.repository}/blobs/uploads/?${query}`, {
    scopes: [`repository:${dst.repository}:pull,push`, pullScope(src.repository)],
    headers: { 'content-length': '0' },
    signal,
    accept: (s) => s === 201 || s === 202,
  });
  await res.body.dump();
  if (res.status === 201) return true;
  const location = header(res, 'location');
  if (location) {
    const cancel = await dst.client.send('DELETE', new URL(location, res.url).toString(), {
      scopes: [`repository:${dst.repository}:pull,push`],
      signal,
      accept: () => true,
    });
    await cancel.body.dump();
  }
  return false;
}
