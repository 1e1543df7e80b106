import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { CredentialsError, GitCredentials, resolveCredentials } from '../../agent/source/credentials.ts';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('Git credentials', () => {
  it('reads the user name and password from variables or files named in the settings', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ks-cred-'));
    dirs.push(dir);
    await writeFile(join(dir, 'password'), 'from-file-secret\n');
    await writeFile(join(dir, 'username'), 'robot');
    const env = { GIT_USER: 'alice', GIT_TOKEN: 'env-secret' };
    const fromEnv = resolveCredentials({ usernameEnv: 'GIT_USER', passwordEnv: 'GIT_TOKEN' }, env);
    expect([fromEnv?.username, fromEnv?.password]).toEqual(['alice', 'env-secret']);
    const fromFiles = resolveCredentials({ usernameFile: join(dir, 'username'), passwordFile: join(dir, 'password') }, env);
    expect([fromFiles?.username, fromFiles?.password]).toEqual(['robot', 'from-file-secret']);
    const tokenOnly = resolveCredentials({ passwordEnv: 'GIT_TOKEN' }, env);
    expect([tokenOnly?.username, tokenOnly?.password]).toEqual(['git', 'env-secret']);
    expect(resolveCredentials(undefined, env)).toBeUndefined();
    expect(resolveCredentials({}, env)).toBeUndefined();
  });

  it('names the missing variable or file, never a value', () => {
    const env = { OTHER: 'value-that-must-not-leak' };
    expect(() => resolveCredentials({ username: 'a', passwordEnv: 'GIT_TOKEN' }, env)).toThrow(/environment variable GIT_TOKEN, which is not set/);
    expect(() => resolveCredentials({ passwordFile: '/nonexistent/pw' }, env)).toThrow(/file \/nonexistent\/pw cannot be read \(ENOENT\)/);
    expect(() => resolveCredentials({ username: 'a' }, env)).toThrow(/no password: add passwordEnv/);
    expect(() => resolveCredentials({ passwordEnv: 'OTHER', passwordFile: '/x' }, env)).toThrow(CredentialsError);
    expect(() => resolveCredentials({ username: 'a:b', passwordEnv: 'OTHER' }, env)).toThrow(/contains ":"/);
    try {
      resolveCredentials({ username: 'a:b', passwordEnv: 'OTHER' }, env);
    } catch (err) {
      expect(inspect(err)).not.toContain('value-that-must-not-leak');
    }
  });

  it('never prints or serialises the password', () => {
    const c = new GitCredentials('bob', 'hunter2-secret');
    const shown = [JSON.stringify(c), JSON.stringify({ nested: c }), inspect(c), String(c), inspect({ c }, { depth: 5 })].join('\n');
    expect(shown).not.toContain('hunter2-secret');
    expect(shown).toContain('bob');
    expect(c.password).toBe('hunter2-secret');
  });
});
