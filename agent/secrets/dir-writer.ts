import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, mkdir, open, readdir, readFile, readlink, rename, rm, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { KupenstackError } from '../errors.ts';
import type { SecretPlace, SecretWriter } from './resolver.ts';

/** What this writer keeps beside a Secret's keys starts with this; a reader lists it as no key. */
export const markerPrefix = '.kupenstack-';
/** The file that says KupenStack made the folder. */
const ownerFile = `${markerPrefix}owner`;
/** In a folder KupenStack did not make: lets it write a credential's keys there (whoever may make the file may write the folder). */
const acceptFile = `${markerPrefix}accept-credentials`;
/** kubelet's names: the link readers follow, and the prefix of the versioned folders. */
const dataLink = '..data';

/** A Secret folder could not be written; names the folder, never a value. */
export class SecretWriteError extends KupenstackError {
  constructor(what: string, options?: { cause?: unknown }) {
    super('secret.write', what, options);
  }
}

/**
 * The standalone SecretWriter: a Secret is the folder
 * `<secretsDir>/<namespace>/<name>/` the EnvFileSecretResolver reads, one file
 * per key, mode 0600 in a 0700 folder. The keys change together the way
 * kubelet swaps a mounted Secret volume: the values go into a new versioned
 * folder, one rename moves the `..data` link to it, and each key is a link
 * through `..data`; a reader never sees a new id beside an old secret.
 */
export class DirSecretWriter implements SecretWriter {
  readonly secretsDir: string;

  constructor(secretsDir: string) {
    this.secretsDir = secretsDir;
  }

  async read(place: SecretPlace): Promise<Record<string, string> | undefined> {
    const dir = this.#dir(place);
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => !n.startsWith('.'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new SecretWriteError(`cannot read the Secret folder ${dir} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err });
    }
    const out: Record<string, string> = {};
    for (const n of names.sort()) out[n] = await readFile(join(dir, n), 'utf8');
    return out;
  }

  /** The nearest folder that exists on the way to the Secret's must be writable (root passes: it may write anyway). */
  async check(place: SecretPlace, owner: string): Promise<void> {
    if ((await this.read(place)) !== undefined) await this.#refuseForeign(place, owner);
    let dir = this.#dir(place);
    for (;;) {
      try {
        await access(dir, constants.W_OK);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' || dirname(dir) === dir)
          throw new SecretWriteError(`cannot write the Secret folder ${this.#dir(place)}: ${dir} is not writable (${code ?? 'error'})`, { cause: err });
        dir = dirname(dir);
      }
    }
  }

  async put(place: SecretPlace, data: Record<string, string>, owner: string): Promise<void> {
    const dir = this.#dir(place);
    try {
      const before = await this.read(place);
      if (before !== undefined) await this.#refuseForeign(place, owner);
      else {
        await mkdir(dir, { recursive: true, mode: 0o700 });
        await writeNew(join(dir, ownerFile), `${owner}\n`);
      }
      const values = { ...before, ...data };
      const version = `..${new Date().toISOString().replace(/[:.]/g, '_')}.${randomBytes(3).toString('hex')}`;
      await mkdir(join(dir, version), { mode: 0o700 });
      const previous = await readlink(join(dir, dataLink)).catch(() => undefined);
      try {
        for (const [key, value] of Object.entries(values)) await writeNew(join(dir, version, key), value);
        await swapLink(dir, dataLink, version);
      } catch (err) {
        // The values never became visible: leave no copy of them behind.
        await rm(join(dir, version), { recursive: true, force: true });
        throw err;
      }
      // A key written by hand before is a plain file: the link replaces it in one rename.
      for (const key of Object.keys(values)) {
        const target = join(dataLink, key);
        if ((await readlink(join(dir, key)).catch(() => undefined)) !== target) await swapLink(dir, key, target);
      }
      if (previous !== undefined && previous !== version) await rm(join(dir, previous), { recursive: true, force: true });
      await chmod(dir, 0o700);
    } catch (err) {
      if (err instanceof SecretWriteError) throw err;
      throw new SecretWriteError(
        `cannot write the Secret folder ${dir} (${(err as NodeJS.ErrnoException).code ?? 'error'}); check that the agent may write under ${this.secretsDir}`,
        { cause: err },
      );
    }
  }

  /** A folder of keys the agent's Secret references read, made by its operator: a manifest must not write into it unasked. */
  async #refuseForeign(place: SecretPlace, owner: string): Promise<void> {
    const dir = this.#dir(place);
    const mark = await readFile(join(dir, ownerFile), 'utf8').catch(() => undefined);
    if (mark?.trim() === owner) return;
    if (
      await access(join(dir, acceptFile)).then(
        () => true,
        () => false,
      )
    )
      return;
    throw new SecretWriteError(
      `the Secret folder ${dir} exists and KupenStack did not make it: name a Secret that does not exist yet in secretRef, ` +
        `or create the file ${join(dir, acceptFile)} to let the agent write the credential's keys into it`,
    );
  }

  async owned(place: SecretPlace, owner: string): Promise<boolean> {
    const dir = this.#dir(place);
    const mark = await readFile(join(dir, ownerFile), 'utf8').catch(() => undefined);
    return (
      mark?.trim() === owner &&
      !(await access(join(dir, acceptFile)).then(
        () => true,
        () => false,
      ))
    );
  }

  async removeOwned(place: SecretPlace, owner: string): Promise<void> {
    if (await this.owned(place, owner)) await rm(this.#dir(place), { recursive: true, force: true });
  }

  #dir(place: SecretPlace): string {
    for (const part of [place.namespace, place.name])
      if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(part) || part.includes('..'))
        throw new SecretWriteError(`"${part}" is not a Kubernetes name (Secret ${place.namespace}/${place.name})`);
    return join(this.secretsDir, place.namespace, place.name);
  }
}

/** A new file readable by its owner only (created 0600, never widened by the umask). */
async function writeNew(file: string, value: string): Promise<void> {
  const fh = await open(file, 'wx', 0o600);
  try {
    await fh.writeFile(value);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Points `dir/name` at `target` in one rename (a reader sees the old link or the new one). */
async function swapLink(dir: string, name: string, target: string): Promise<void> {
  const tmp = join(dir, `.${name}.${randomBytes(3).toString('hex')}.tmp`);
  await symlink(target, tmp);
  try {
    await rename(tmp, join(dir, name));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
