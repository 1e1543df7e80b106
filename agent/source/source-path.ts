import { realpath, stat } from 'node:fs/promises';
import { join, posix, sep } from 'node:path';
import { SourceError } from './source.ts';

/**
 * Normalises the Sync's `path` (relative to the source root, forward slashes):
 * `./`, `.` and `` mean the root. Absolute paths and `..` are refused, since
 * they would leave the source.
 */
export function normalizeSourcePath(path: string | undefined): string {
  const raw = (path ?? '').replaceAll('\\', '/');
  if (raw.startsWith('/') || /^[a-zA-Z]:/.test(raw))
    throw new SourceError('path', `path "${path}" is absolute; give it relative to the repository root, e.g. "./clusters/prod"`);
  if (raw.split('/').includes('..')) throw new SourceError('path', `path "${path}" contains "..", which would leave the repository; give a folder inside it`);
  const normalized = posix.normalize(raw === '' ? '.' : raw).replace(/\/+$/, '');
  return normalized === '' ? '.' : normalized;
}

/**
 * The Sync's path, or the error to report at the first fetch: a source is
 * built even from a bad path, so the Sync's status can say what is wrong.
 */
export function sourcePathOrError(path: string | undefined): { path: string; error?: SourceError } {
  try {
    return { path: normalizeSourcePath(path) };
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
    return { path: path ?? '.', error: err };
  }
}

/**
 * The real location of `path` under `root`. It must exist and stay inside
 * `root` once symbolic links are followed; `where` names the revision in the message.
 */
export async function resolveSourcePath(root: string, path: string, where: string): Promise<string> {
  const rootReal = await realpath(root);
  let real: string;
  try {
    real = await realpath(join(rootReal, path));
  } catch {
    throw new SourceError('path', `path "${path}" does not exist in ${where}; check the Sync's path (relative to the repository root)`);
  }
  if (real !== rootReal && !real.startsWith(rootReal + sep))
    throw new SourceError(
      'path',
      `path "${path}" leads outside the repository through a symbolic link in ${where}; point it at a real folder inside the repository`,
    );
  const info = await stat(real);
  if (!info.isDirectory() && !info.isFile()) throw new SourceError('path', `path "${path}" in ${where} is neither a folder nor a file`);
  return real;
}
