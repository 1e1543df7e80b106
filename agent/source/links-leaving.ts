import { realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';

/**
 * The links under `dir` (relative names) that resolve outside it. A textual check of each link's
 * target cannot see links through other links (`a -> .`, `b -> a/../x`); the file system can.
 * A dangling link points nowhere, so nowhere outside.
 */
export async function linksLeaving(dir: string, links: Iterable<string>): Promise<string[]> {
  const root = await realpath(dir);
  const leaving: string[] = [];
  for (const rel of links) {
    let real: string;
    try {
      real = await realpath(join(dir, rel));
    } catch {
      continue;
    }
    if (real !== root && !real.startsWith(root + sep)) leaving.push(rel);
  }
  return leaving;
}
