import { stat } from 'node:fs/promises';
import { relative, resolve, sep } from 'node:path';
import { watch as watchFiles } from 'chokidar';
import { defaultLimits, type LoadLimits } from '../load/limits.ts';
import { directoryRevision } from '../load/revision.ts';
import { resolveSourcePath, sourcePathOrError } from './source-path.ts';
import { type Artifact, type Source, SourceError } from './source.ts';

export interface DirectorySourceOptions {
  /** The folder on the agent's file system (relative paths are taken from the working directory). */
  directory: string;
  /** Folder inside it holding the manifests (the Sync's `path`); default: the folder itself. */
  path?: string;
  /** Quiet time after the last change before `watch` reports (default 300 ms). */
  debounceMs?: number;
  limits?: LoadLimits;
}

/** A change keeps firing at most this often while files keep changing (a long copy). */
const maxWaitMs = 2_000;

/**
 * A local folder, for development and standalone mode. The revision is a
 * hash of the manifest files the loader would read (same selection: hidden
 * files and `.kupenstackignore` matches left out), so saving a file without
 * changing it, or touching an ignored file, keeps the revision.
 */
export class DirectorySource implements Source {
  readonly kind = 'directory' as const;
  readonly description: string;
  readonly #root: string;
  readonly #path: string;
  readonly #pathError: SourceError | undefined;
  readonly #debounceMs: number;
  readonly #limits: LoadLimits;
  readonly #stops = new Set<() => Promise<void>>();
  #watching: Promise<void> = Promise.resolve();

  constructor(options: DirectorySourceOptions) {
    this.#root = resolve(options.directory);
    const { path, error } = sourcePathOrError(options.path);
    this.#pathError = error;
    this.#path = error ? '.' : path;
    this.#debounceMs = options.debounceMs ?? 300;
    this.#limits = options.limits ?? defaultLimits;
    this.description = `directory ${this.#root}${path === '.' ? '' : ` path ${path}`}`;
  }

  async fetch(signal?: AbortSignal): Promise<Artifact> {
    if (this.#pathError) throw this.#pathError;
    signal?.throwIfAborted();
    try {
      if (!(await stat(this.#root)).isDirectory()) throw new Error('not a folder');
    } catch {
      throw new SourceError('path', `the directory ${this.#root} does not exist or is not a folder; create it or fix the source's directory`);
    }
    const dir = await resolveSourcePath(this.#root, this.#path, `directory ${this.#root}`);
    return { revision: await directoryRevision(dir, this.#limits), dir };
  }

  /**
   * Calls `onChange` once per burst of changes under the folder (after
   * `debounceMs` of quiet, or every 2 s while changes continue). Editor
   * temporary files, hidden files and `.git` are ignored.
   */
  watch(onChange: () => void): () => void {
    const watcher = watchFiles(this.#root, {
      ignoreInitial: true,
      ignored: (path: string) => ignoredPath(relative(this.#root, path)),
    });
    let timer: NodeJS.Timeout | undefined;
    let burstStarted = 0;
    const fire = (): void => {
      timer = undefined;
      burstStarted = 0;
      onChange();
    };
    const changed = (): void => {
      const now = Date.now();
      if (burstStarted === 0) burstStarted = now;
      if (timer) clearTimeout(timer);
      const wait = Math.max(0, Math.min(this.#debounceMs, burstStarted + maxWaitMs - now));
      timer = setTimeout(fire, wait);
    };
    watcher.on('all', changed);
    // A folder that vanishes or cannot be read: let the next fetch say what is wrong.
    watcher.on('error', changed);
    const ready = new Promise<void>((resolveReady) => watcher.once('ready', () => resolveReady()));
    this.#watching = Promise.all([this.#watching, ready]).then(() => undefined);
    const stop = async (): Promise<void> => {
      if (timer) clearTimeout(timer);
      this.#stops.delete(stop);
      await watcher.close();
    };
    this.#stops.add(stop);
    return () => void stop();
  }

  /** Resolves when every watch started so far has scanned the folder (changes before that may be missed). */
  whenWatching(): Promise<void> {
    return this.#watching;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#stops].map((stop) => stop()));
  }
}

/** Paths (relative to the watched folder) whose changes never matter: VCS data, hidden files, editor temporaries. */
export function ignoredPath(rel: string): boolean {
  if (rel === '' || rel.startsWith('..')) return false;
  return rel.split(sep).some((part) => part.startsWith('.') || part === 'node_modules' || editorTemp(part));
}

function editorTemp(name: string): boolean {
  return (
    name.endsWith('~') || // emacs, gedit backups
    /^#.*#$/.test(name) || // emacs auto-save
    /\.(swp|swo|swx|tmp|bak|orig|crswap)$/i.test(name) || // vim swap, generic temporaries, Chrome/VS Code saves
    name === '4913' || // vim's write test
    /___jb_(tmp|old|bak)___$/.test(name) // JetBrains safe write
  );
}
