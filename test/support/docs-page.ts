import { parse } from 'yaml';

/**
 * One page of docs/ as the executable-documentation contract reads it (/work/wt/DOCS-CONTRACT.md,
 * docs/how-to/develop.md): its front matter's test bed, and its fenced blocks with their markers.
 */
export type Peer = 'openstack' | 'registry' | 'git' | 'kubernetes';

export interface Block {
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  body: string;
  /** The marker on the nearest non-blank line above the fence, if any. */
  marker?: { kind: 'run' | 'norun' | 'novalidate'; why: string };
  /** A yaml block whose first line is `# file: <path>`: the runner writes it there. */
  file?: string;
}

export interface Page {
  testbed: Peer[];
  blocks: Block[];
  /** Contract breaches found while reading (a shell block without a marker, a marker without a reason…), each `line: what`. */
  problems: string[];
}

export const shellLangs = new Set(['sh', 'bash', 'shell', 'console']);
const peers = new Set<Peer>(['openstack', 'registry', 'git', 'kubernetes']);

function frontMatter(lines: string[], problems: string[]): { testbed: Peer[]; end: number } {
  if (lines[0] !== '---') return { testbed: [], end: 0 };
  const end = lines.indexOf('---', 1);
  if (end < 0) {
    problems.push('1: front matter without its closing ---');
    return { testbed: [], end: 0 };
  }
  const fm = (parse(lines.slice(1, end).join('\n')) ?? {}) as { testbed?: unknown };
  const testbed = Array.isArray(fm.testbed) ? fm.testbed.map(String) : [];
  for (const p of testbed) if (!peers.has(p as Peer)) problems.push(`1: testbed "${p}" is none of ${[...peers].join(', ')}`);
  return { testbed: testbed.filter((p): p is Peer => peers.has(p as Peer)), end: end + 1 };
}

function markerAbove(lines: string[], fence: number): Block['marker'] | undefined {
  let i = fence - 1;
  while (i >= 0 && lines[i]!.trim() === '') i--;
  const m = i >= 0 ? /^<!--\s*(run|norun|novalidate)\s*(?::\s*(.*?))?\s*-->$/.exec(lines[i]!.trim()) : null;
  return m ? { kind: m[1] as 'run' | 'norun' | 'novalidate', why: m[2] ?? '' } : undefined;
}

/** Reads a page: fences of three or more backticks or tildes, closed by the same run or longer. */
export function readPage(text: string): Page {
  const lines = text.split('\n');
  const problems: string[] = [];
  const { testbed, end } = frontMatter(lines, problems);
  const blocks: Block[] = [];
  for (let i = end; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[2]!;
    let close = i + 1;
    while (close < lines.length && !new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`).test(lines[close]!)) close++;
    const body = lines.slice(i + 1, close).join('\n');
    const lang = open[3]!.toLowerCase();
    const marker = markerAbove(lines, i);
    const file = lang === 'yaml' || lang === 'yml' ? /^#\s*file:\s*(\S+)\s*$/.exec(lines[i + 1] ?? '')?.[1] : undefined;
    blocks.push({ line: i + 1, lang, body, ...(marker ? { marker } : {}), ...(file ? { file } : {}) });
    if (shellLangs.has(lang) && marker?.kind !== 'run' && marker?.kind !== 'norun') problems.push(`${i + 1}: a ${lang} block needs <!-- run --> or <!-- norun: why --> on the line above it`);
    if (marker?.kind === 'norun' && marker.why === '') problems.push(`${i + 1}: <!-- norun --> needs a reason: <!-- norun: why -->`);
    if (marker?.kind === 'novalidate' && marker.why === '') problems.push(`${i + 1}: <!-- novalidate --> needs a reason: <!-- novalidate: why -->`);
    if (marker?.kind === 'run' && !shellLangs.has(lang)) problems.push(`${i + 1}: <!-- run --> on a ${lang || 'plain'} block; only sh, bash, shell and console blocks run`);
    if (file && (file.startsWith('/') || file.split('/').includes('..'))) problems.push(`${i + 1}: # file: ${file} must be a relative path inside the page's folder`);
    i = close;
  }
  return { testbed, blocks, problems };
}

/** A block's command text as bash runs it: a console block's `$ ` prompts stripped, its output lines left out. */
export function commandsOf(b: Block): string {
  if (b.lang !== 'console') return b.body;
  return b.body
    .split('\n')
    .filter((l) => l.startsWith('$ '))
    .map((l) => l.slice(2))
    .join('\n');
}

/**
 * The one bash script a page runs as (contract: one `bash -euo pipefail` session, blocks in page
 * order). Before each step a marker line `::ks-step <line>::` goes to the output, which tells the
 * failing block and splits the output per block; `# file:` blocks are written, other yaml blocks
 * validated with `kupenstack validate` from a file outside the working directory.
 */
export function pageScript(page: Page, scratch: string): string {
  const out = ['set -euo pipefail', 'exec 2>&1'];
  for (const b of page.blocks) {
    const isYaml = b.lang === 'yaml' || b.lang === 'yml';
    if (b.marker?.kind === 'run') out.push(`echo '::ks-step ${b.line}::'`, commandsOf(b));
    else if (isYaml && b.file) out.push(`echo '::ks-step ${b.line}::'`, `mkdir -p "$(dirname '${b.file}')"`, `cat > '${b.file}' <<'KS_DOCS_EOF'`, b.body, 'KS_DOCS_EOF');
    else if (isYaml && b.marker?.kind !== 'novalidate') {
      const tmp = `${scratch}/block-${b.line}.yaml`;
      out.push(`echo '::ks-step ${b.line}::'`, `cat > '${tmp}' <<'KS_DOCS_EOF'`, b.body, 'KS_DOCS_EOF', `kupenstack validate '${tmp}'`);
    }
  }
  out.push("echo '::ks-step end::'");
  return `${out.join('\n')}\n`;
}

/** The output split per step: line of the block → what it printed. */
export function stepsOf(output: string): { line: string; output: string }[] {
  const parts = output.split(/^::ks-step (\d+|end)::$/m);
  const steps: { line: string; output: string }[] = [];
  for (let i = 1; i < parts.length; i += 2) steps.push({ line: parts[i]!, output: (parts[i + 1] ?? '').replace(/^\n/, '') });
  return steps;
}
