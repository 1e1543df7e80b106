import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { extname, join, relative, sep } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import type { Diagnostic } from '../diagnostic.ts';
import type { LoadLimits } from './limits.ts';

/** A manifest file read from disk, checked for size and encoding. */
export interface ManifestFile {
  /** Relative to the root, forward slashes. */
  file: string;
  text: string;
}

const manifestExtensions = new Set(['.yaml', '.yml', '.json']);
const ignoreFileName = '.kupenstackignore';

/**
 * Reads every manifest file under `root` (or `root` itself when it is a file).
 * Hidden files and folders, `.kupenstackignore` matches and non-manifest
 * extensions are skipped; symlinks that leave the root, binary or non-UTF-8
 * files and oversize files are reported, never read into the revision.
 */
export async function readManifestFiles(root: string, limits: LoadLimits): Promise<{ files: ManifestFile[]; diagnostics: Diagnostic[] }> {
  const r: Reading = { limits, files: [], diagnostics: [], total: 0, overBudget: false };
  const rootReal = await realpath(root);
  const rootStat = await stat(rootReal);
  if (!rootStat.isDirectory()) {
    await readOne(r, rootReal, baseName(root));
    return { files: r.files, diagnostics: r.diagnostics };
  }
  const ig = await loadIgnore(rootReal);
  await walk(r, { rootReal, ig, visited: new Set<string>([rootReal]) }, rootReal, '');
  return { files: r.files, diagnostics: r.diagnostics };
}

/** What a read collects as it goes, and how much of the revision's budget it has used. */
interface Reading {
  limits: LoadLimits;
  files: ManifestFile[];
  diagnostics: Diagnostic[];
  total: number;
  overBudget: boolean;
}

function problem(r: Reading, file: string, code: string, message: string): void {
  r.diagnostics.push({ code, file, line: 0, column: 0, kind: '', name: '', path: '', message });
}

/** One file into the revision, unless it is too large, past the revision's budget, binary or not UTF-8. */
async function readOne(r: Reading, absolute: string, file: string): Promise<void> {
  const { limits } = r;
  if (r.overBudget) return;
  const info = await stat(absolute);
  if (info.size > limits.maxFileBytes) {
    problem(r, file, 'file.too-large', `the file has ${info.size} bytes, more than the limit of ${limits.maxFileBytes}; split it into several files`);
    return;
  }
  r.total += info.size;
  if (r.total > limits.maxRevisionBytes) {
    r.overBudget = true;
    problem(
      r,
      file,
      'revision.too-large',
      `the revision holds more than ${limits.maxRevisionBytes} bytes of manifests; nothing past this file was read. Split the repository into several Syncs or raise the limit`,
    );
    return;
  }
  const bytes = await readFile(absolute);
  const decoded = decode(bytes);
  if ('problem' in decoded && decoded.problem === 'binary') {
    problem(r, file, 'file.binary', 'the file holds binary data (a NUL byte); manifests must be UTF-8 text. Remove it or add it to .kupenstackignore');
    return;
  }
  if ('problem' in decoded) {
    problem(r, file, 'file.encoding', 'the file is not valid UTF-8; save it as UTF-8');
    return;
  }
  r.files.push({ file, text: decoded.text });
}

/** One folder, in name order: hidden and ignored entries skipped, links followed inside the root only, each folder once. */
async function walk(r: Reading, tree: { rootReal: string; ig: Ignore; visited: Set<string> }, dirReal: string, relDir: string): Promise<void> {
  const { rootReal, ig, visited } = tree;
  const entries = (await readdir(dirReal, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
    const absolute = join(dirReal, entry.name);
    let isDir = entry.isDirectory();
    let target = absolute;
    if (entry.isSymbolicLink()) {
      try {
        target = await realpath(absolute);
      } catch {
        problem(r, rel, 'file.symlink-broken', 'the symbolic link points nowhere; remove it');
        continue;
      }
      if (target !== rootReal && !target.startsWith(rootReal + sep)) {
        problem(
          r,
          rel,
          'file.symlink-escape',
          'the symbolic link points outside the repository root; manifests must live inside it. Replace the link with the file itself',
        );
        continue;
      }
      isDir = (await lstat(target)).isDirectory();
    }
    if (ig.ignores(isDir ? `${rel}/` : rel)) continue;
    if (isDir) {
      if (visited.has(target)) continue; // a link back up the tree
      visited.add(target);
      await walk(r, tree, target, rel);
    } else if (manifestExtensions.has(extname(entry.name).toLowerCase())) {
      await readOne(r, target, rel);
    }
  }
}

async function loadIgnore(rootReal: string): Promise<Ignore> {
  const ig = ignore();
  try {
    ig.add(await readFile(join(rootReal, ignoreFileName), 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return ig;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

type Decoded = { text: string } | { problem: 'binary' | 'encoding' };

function decode(bytes: Buffer): Decoded {
  if (bytes.subarray(0, 8192).includes(0)) return { problem: 'binary' };
  try {
    return { text: utf8.decode(bytes) };
  } catch {
    return { problem: 'encoding' };
  }
}

function baseName(path: string): string {
  return relative(join(path, '..'), path).split(sep).join('/');
}
