import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatDiagnostic } from '../../agent/diagnostic.ts';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { checkPath } from '../../agent/validate/check-path.ts';
import { readPage, type Page } from '../support/docs-page.ts';

/**
 * Issue 46: every YAML block of docs/ is a manifest `kupenstack validate` accepts, unless marked
 * `<!-- novalidate: why -->` — on every page, not only the pages with runnable blocks
 * (test/integration/docs/pages.test.ts runs those). The `# file:` blocks of a page are one
 * repository, validated together (a Subnet may name the Network of another block); every other
 * block alone.
 */
const root = join(import.meta.dirname, '..', '..');
const registry = loadSchemaRegistry();
const scratch = mkdtempSync(join(tmpdir(), 'ks-docs-yaml-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function pagesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name.startsWith('.') ? [] : pagesOf(join(dir, e.name))) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

/** Each repository the page's yaml blocks make, as `{ where, files }`: one for its `# file:` blocks, one per other block. */
function reposOf(name: string, page: Page): { where: string; files: Map<string, string> }[] {
  const yaml = page.blocks.filter((b) => (b.lang === 'yaml' || b.lang === 'yml') && b.marker?.kind !== 'novalidate');
  const together = new Map(yaml.filter((b) => b.file).map((b) => [b.file!, b.body]));
  const alone = yaml.filter((b) => !b.file).map((b) => ({ where: `${name}:${b.line}`, files: new Map([['block.yaml', b.body]]) }));
  return [...(together.size > 0 ? [{ where: `${name} (its "# file:" blocks)`, files: together }] : []), ...alone];
}

/** The diagnostics of one repository, each prefixed with where the reader finds it. */
async function problems(repo: { where: string; files: Map<string, string> }, i: number): Promise<string[]> {
  const dir = join(scratch, String(i));
  for (const [file, body] of repo.files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), `${body}\n`);
  }
  const found = (await checkPath(dir, registry)).diagnostics;
  return found.map((d) => `${repo.where}: ${formatDiagnostic(d)}`);
}

describe('the YAML of the documentation', () => {
  const docs = pagesOf(join(root, 'docs')).map((p) => ({ name: relative(root, p), page: readPage(readFileSync(p, 'utf8')) }));
  const repos = docs.flatMap(({ name, page }) => reposOf(name, page));

  it('finds the manifests the pages show', () => {
    expect(repos.length).toBeGreaterThan(3);
  });

  it('every block not marked novalidate is valid', async () => {
    const all = (await Promise.all(repos.map((r, i) => problems(r, i)))).flat();
    expect(all, 'fix the manifest, or mark a block that is not one <!-- novalidate: why -->').toEqual([]);
  });

  it('a broken block is reported with its page and line', async () => {
    const page = readPage(['# A page', '', '```yaml', 'apiVersion: kupenstack.io/v1alpha1', 'kind: Network', 'metadata: {name: n, namespace: a}', 'spec: {mtu: 12}', '```', ''].join('\n'));
    const found = (await Promise.all(reposOf('docs/planted.md', page).map((r, i) => problems(r, 1000 + i)))).flat();
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^docs\/planted\.md:3: .*mtu/);
  });
});
