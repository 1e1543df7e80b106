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
  const files: ManifestFile[] = [];
  const diagnostics: Diagnostic[] = [];
  const rootReal = await realpath(root);
  const rootStat = await stat(rootReal);
  let total = 0;
  let overBudget = false;

  const problem = (file: string, code: string, message: string): void => {
    diagnostics.push({ code, file, line: 0, column: 0, kind: '', name: '', path: '', message });
  };

  const readOne = async (absolute: string, file: string): Promise<void> => {
    if (overBudget) return;
    const info = await stat(absolute);
    if (info.size > limits.maxFileBytes) {
      problem(file, 'file.too-large', `the file has ${info.size} bytes, more than the limit of ${limits.maxFileBytes}; split it into several files`);
      return;
    }
    total += info.size;
    if (total > limits.maxRevisionBytes) {
      overBudget = true;
      problem(
        file,
        'revision.too-large',
        `the revision holds more than ${limits.maxRevisionBytes} bytes of manifests; nothing past this file was read. Split the repository into several Syncs or raise the limit`,
      );
      return;
    }
    const bytes = await readFile(absolute);
    const decoded = decode(bytes);
    if ('problem' in decoded && decoded.problem === 'binary') {
      problem(file, 'file.binary', 'the file holds binary data (a NUL byte); manifests must be UTF-8 text. Remove it or add it to .kupenstackignore');
      return;
    }
    if ('problem' in decoded) {
      problem(file, 'file.encoding', 'the file is not valid UTF-8; save it as UTF-8');
      return;
    }
    files.push({ file, text: decoded.text });
  };

  if (!rootStat.isDirectory()) {
    await readOne(rootReal, baseName(root));
    return { files, diagnostics };
  }

  const ig = await loadIgnore(rootReal);
  const visited = new Set<string>([rootReal]);

  const walk = async (dirReal: string, relDir: string): Promise<void> => {
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
          problem(rel, 'file.symlink-broken', 'the symbolic link points nowhere; remove it');
          continue;
        }
        if (target !== rootReal && !target.startsWith(rootReal + sep)) {
          problem(rel, 'file.symlink-escape', 'the symbolic link points outside the repository root; manifests must live inside it. Replace the link with the file itself');
          continue;
        }
        isDir = (await lstat(target)).isDirectory();
      }
      if (ig.ignores(isDir ? `${rel}/` : rel)) continue;
      if (isDir) {
        if (visited.has(target)) continue; // a link back up the tree
        visited.add(target);
        await walk(target, rel);
      } else if (manifestExtensions.has(extname(entry.name).toLowerCase())) {
        await readOne(target, rel);
      }
    }
  };
  await walk(rootReal, '');
  return { files, diagnostics };
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
