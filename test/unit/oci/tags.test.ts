import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryClient } from '../../../oci/client.ts';
import { listTags } from '../../../oci/tags.ts';

// distribution 2.8 (the test bed) ignores pagination; this covers the spec's Link-paged walk,
// which registries like Harbor, GHCR and distribution 3 answer. A local HTTP answerer, not a registry double.
const all = Array.from({ length: 7 }, (_, i) => `v${i}`);
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const n = Number(url.searchParams.get('n') ?? '1000');
  const last = url.searchParams.get('last');
  const start = last ? all.indexOf(last) + 1 : 0;
  const page = all.slice(start, start + n);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (start + n < all.length) headers.link = `</v2/r/tags/list?n=${n}&last=${page.at(-1)}>; rel="next"`;
  res.writeHead(200, headers).end(JSON.stringify({ name: 'r', tags: page }));
});

describe('tag listing', () => {
  let registry = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    registry = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server.close());

  it('follows Link pages to the end', async () => {
    expect(await listTags(new RegistryClient({ registry, insecure: true }), 'r', undefined, 3)).toEqual(all);
  });
});
