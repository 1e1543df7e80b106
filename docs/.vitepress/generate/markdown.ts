/**
 * Text from the sources as VitePress takes it: Markdown that Vue compiles, so `<x>` would be a tag and
 * `{{ }}` an interpolation. Cells also escape the table's `|`, and a line break ends nothing.
 */
export function text(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\{\{/g, '&#123;&#123;').replace(/\}\}/g, '&#125;&#125;');
}

export function cell(s: string): string {
  return text(s).replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** A code span that holds any text (backticks inside get a longer fence); Vue leaves code alone. */
export function code(s: string): string {
  const ticks = '`'.repeat(Math.max(0, ...[...s.matchAll(/`+/g)].map((m) => m[0].length)) + 1);
  const pad = s.startsWith('`') || s.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${s.replace(/\|/g, '\\|')}${pad}${ticks}`;
}

/** The banner every generated page starts with: edit the source, then `npm run docs:generate`. */
export function banner(source: string): string {
  return `<!-- Generated from ${source} by docs/.vitepress/generate (npm run docs:generate): edit the source, not this page. -->\n`;
}
