import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The four sections of the site (Diátaxis), in the order the nav shows them. */
export const sections = [
  { dir: 'tutorials', text: 'Tutorials' },
  { dir: 'how-to', text: 'How-to guides' },
  { dir: 'reference', text: 'Reference' },
  { dir: 'explanation', text: 'Explanation' },
] as const;

export interface SidebarItem {
  text: string;
  link?: string;
  items?: SidebarItem[];
  collapsed?: boolean;
}

const docs = join(import.meta.dirname, '..');

/** Pages read in a sequence come first, in it (a tutorial builds on the one before); the rest by file name. */
const readingOrder = ['tutorials/local-cloud.md', 'tutorials/first-repository.md', 'tutorials/first-image.md'];
const byReadingOrder = (a: string, b: string): number => {
  const [i, j] = [readingOrder.indexOf(a), readingOrder.indexOf(b)].map((k) => (k < 0 ? readingOrder.length : k));
  return i! - j! || a.localeCompare(b);
};

/** Every Markdown page under docs/ (paths relative to it), hidden folders left out. */
export function docsPages(dir = docs): string[] {
  return readdirSync(dir)
    .filter((f) => !f.startsWith('.') && f !== 'node_modules')
    .flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? docsPages(p) : f.endsWith('.md') ? [relative(docs, p)] : [];
    })
    .sort();
}

/** A page's title: its first `# ` heading, else its file name. */
export function titleOf(page: string): string {
  const text = readFileSync(join(docs, page), 'utf8');
  return /^# (.+)$/m.exec(text)?.[1]?.replace(/`/g, '').trim() ?? page.replace(/\.md$/, '');
}

function linkOf(page: string): string {
  return `/${page.replace(/(^|\/)index\.md$/, '$1').replace(/\.md$/, '')}`;
}

/** One group per section folder; a sub-folder (reference/kinds/) is a collapsed group of its own. */
function group(dir: string, text: string): SidebarItem {
  const pages = docsPages().filter((p) => p.startsWith(`${dir}/`));
  const direct = pages.filter((p) => !p.slice(dir.length + 1).includes('/')).sort(byReadingOrder);
  const subs = [...new Set(pages.filter((p) => !direct.includes(p)).map((p) => p.split('/').slice(0, 2).join('/')))];
  const items: SidebarItem[] = direct.map((p) => ({ text: titleOf(p), link: linkOf(p) }));
  for (const sub of subs) {
    const inner = group(sub, sub.split('/')[1]!);
    const index = pages.find((p) => p === `${sub}/index.md`);
    items.push({ ...inner, text: index ? titleOf(index) : inner.text, collapsed: true, ...(index ? { link: linkOf(index) } : {}), items: inner.items!.filter((i) => i.link !== linkOf(`${sub}/index.md`)) });
  }
  return { text, items };
}

/** The sidebar: every page of every section, titled by its heading (test/unit/docs-contract.test.ts checks none is missing). */
export function sidebar(): SidebarItem[] {
  return sections.map((s) => group(s.dir, s.text));
}

/** Every link the sidebar holds. */
export function sidebarLinks(items: readonly SidebarItem[] = sidebar()): string[] {
  return items.flatMap((i) => [...(i.link ? [i.link] : []), ...sidebarLinks(i.items ?? [])]);
}

export { linkOf };
