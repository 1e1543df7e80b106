import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EnvFileSecretResolver, SecretNotFoundError } from '../../agent/secrets/env-file.ts';
import { gitCredentials } from '../../agent/source/credentials.ts';

const dir = mkdtempSync(join(tmpdir(), 'ks-secrets-'));
function secret(namespace: string, name: string, values: Record<string, string>): void {
  // The layout kubelet gives a mounted Secret: keys are links into a ..data directory.
  const data = join(dir, namespace, name, '..data');
  mkdirSync(data, { recursive: true });
  for (const [key, value] of Object.entries(values)) {
    writeFileSync(join(data, key), value);
    symlinkSync(join('..data', key), join(dir, namespace, name, key));
  }
}

describe('EnvFileSecretResolver', () => {
  it('reads env, file and {name, namespace, key} from a directory laid out like mounted Secrets, on every call', async () => {
    secret('team-a', 'registry', { username: 'robot', password: 'pw-1\n' });
    secret('kupenstack-system', 'git', { password: 'tok' });
    const r = new EnvFileSecretResolver({ secretsDir: dir, env: { TOKEN: 'from-env' } });
    expect(await r.get({ env: 'TOKEN' })).toBe('from-env');
    expect(await r.get({ name: 'registry', namespace: 'team-a', key: 'password' })).toBe('pw-1');
    expect(await r.getAll({ name: 'registry', namespace: 'team-a' })).toEqual({ password: 'pw-1', username: 'robot' });
    // Cluster-scoped kinds read from the agent's namespace.
    expect(await r.get({ name: 'git', key: 'password' })).toBe('tok');
    writeFileSync(join(dir, 'team-a', 'registry', '..data', 'password'), 'pw-2');
    expect(await r.get({ name: 'registry', namespace: 'team-a', key: 'password' })).toBe('pw-2');
    const f = join(dir, 'plain');
    writeFileSync(f, 'file-value\n');
    expect(await r.get({ file: f })).toBe('file-value');
  });

  it("reads a docker-registry Secret's .dockerconfigjson key; kubelet's ..data entries are not keys", async () => {
    secret('team-c', 'regcred', { '.dockerconfigjson': '{"auths":{}}' });
    const r = new EnvFileSecretResolver({ secretsDir: dir, env: {} });
    expect(await r.getAll({ name: 'regcred', namespace: 'team-c' })).toEqual({ '.dockerconfigjson': '{"auths":{}}' });
  });

  it('names the reference, never a value, when a secret is missing', async () => {
    secret('team-b', 'creds', { password: 'value-that-must-not-leak' });
    const r = new EnvFileSecretResolver({ secretsDir: dir, env: {} });
    await expect(r.get({ env: 'NOPE' })).rejects.toThrow('environment variable NOPE is not set');
    await expect(r.get({ name: 'creds', namespace: 'team-b', key: 'username' })).rejects.toThrow(/cannot read .*team-b\/creds\/username: ENOENT \(Secret team-b\/creds key username\)/);
    await expect(r.getAll({ name: 'gone', namespace: 'team-b' })).rejects.toThrow(/Secret team-b\/gone not found/);
    await expect(r.get({ name: '../etc', namespace: 'team-b', key: 'x' })).rejects.toThrow(/is not a Kubernetes name/);
    const err = await r.get({ name: 'creds', namespace: 'team-b', key: 'username' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SecretNotFoundError);
    expect(inspect(err)).not.toContain('value-that-must-not-leak');
  });

  it('gives Git credentials from a Secret with password and optional username keys', async () => {
    secret('kupenstack-system', 'token-only', { password: 't0ken' });
    secret('kupenstack-system', 'user-pass', { username: 'alice', password: 'pw' });
    const r = new EnvFileSecretResolver({ secretsDir: dir });
    const token = await gitCredentials({ secretRef: { name: 'token-only' } }, r);
    expect([token?.username, token?.password]).toEqual(['git', 't0ken']);
    const both = await gitCredentials({ secretRef: { name: 'user-pass' } }, r);
    expect([both?.username, both?.password]).toEqual(['alice', 'pw']);
    await expect(gitCredentials({ secretRef: { name: 'absent' } }, r)).rejects.toThrow(/the Git password cannot be read: .*Secret absent key password/);
  });
});
