import { header, type RegistryClient } from './client.ts';
import { OciError } from './errors.ts';
import { pullScope } from './manifest.ts';

/**
 * All tags of a repository. Follows `Link: <…>; rel="next"` pages, and copes
 * with registries that ignore `n`/`last` (distribution 2.8 answers the full,
 * unsorted list every time, without Link): a page that adds nothing new ends
 * the walk. Sorted here; the registry's order means nothing.
 */
export async function listTags(client: RegistryClient, repository: string, signal?: AbortSignal, pageSize = 1000): Promise<string[]> {
  const seen = new Set<string>();
  let next: string | undefined = `/v2/${repository}/tags/list?n=${pageSize}`;
  for (let page = 0; next && page < 10_000; page++) {
    const res = await client.send('GET', next, { scopes: [pullScope(repository)], headers: { accept: 'application/json' }, signal });
    const text = await res.body.text();
    let tags: unknown;
    try {
      tags = (JSON.parse(text) as { tags?: unknown }).tags;
    } catch {
      throw new OciError('oci.registry', `${client.registry}/${repository}: the tag list is not JSON`);
    }
    if (tags !== null && tags !== undefined && !Array.isArray(tags))
      throw new OciError('oci.registry', `${client.registry}/${repository}: the tag list has no tags array`);
    const before = seen.size;
    for (const t of (tags ?? []) as unknown[]) if (typeof t === 'string') seen.add(t);
    const link = /<([^>]+)>\s*;\s*rel="?next"?/.exec(header(res, 'link') ?? '');
    if (!link || seen.size === before) break;
    next = new URL(link[1]!, res.url).toString();
  }
  return [...seen].sort();
}
