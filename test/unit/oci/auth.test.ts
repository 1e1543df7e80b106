import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRealm } from '../../../oci/auth/bearer.ts';
import { challengeScopes, mergeScopes, parseChallenges, scopesCover } from '../../../oci/auth/challenge.ts';
import { DockerConfigCredentials, normalizeConfigKey } from '../../../oci/auth/docker-config.ts';

describe('WWW-Authenticate', () => {
  it('parses a Bearer challenge with quoted params', () => {
    const [c] = parseChallenges('Bearer realm="http://127.0.0.1:5053/token",service="kupenstack-testbed",scope="repository:vm/a:pull,push",error="insufficient_scope"');
    expect(c).toEqual({ scheme: 'bearer', params: { realm: 'http://127.0.0.1:5053/token', service: 'kupenstack-testbed', scope: 'repository:vm/a:pull,push', error: 'insufficient_scope' } });
    expect(challengeScopes(c!)).toEqual(['repository:vm/a:pull,push']);
  });

  it('parses several challenges and bare schemes', () => {
    expect(parseChallenges('Basic realm="x", Bearer realm="https://a/t",service=reg').map((c) => c.scheme)).toEqual(['basic', 'bearer']);
    expect(parseChallenges('Negotiate, Basic realm="r"').map((c) => c.scheme)).toEqual(['negotiate', 'basic']);
    expect(parseChallenges(undefined)).toEqual([]);
  });

  it('merges scopes and knows when a token covers a request (pull → pull,push upgrade)', () => {
    expect(mergeScopes(['repository:a:pull', 'repository:a:push', 'repository:b:pull'])).toEqual(['repository:a:pull,push', 'repository:b:pull']);
    expect(scopesCover(['repository:a:pull,push'], ['repository:a:pull'])).toBe(true);
    expect(scopesCover(['repository:a:pull'], ['repository:a:pull,push'])).toBe(false);
    expect(scopesCover(['repository:a:pull'], ['repository:b:pull'])).toBe(false);
  });
});

describe('token realm validation', () => {
  it('sends credentials only to https or to the loopback host of the registry', () => {
    expect(checkRealm('https://auth.example/token', 'reg.example', true).host).toBe('auth.example');
    expect(checkRealm('http://127.0.0.1:5053/token', '127.0.0.1:5052', true).port).toBe('5053');
    expect(() => checkRealm('http://auth.example/token', 'reg.example', true)).toThrow(/plain http/);
    expect(() => checkRealm('http://127.0.0.1:5053/token', 'reg.example', true)).toThrow(/plain http/);
    expect(() => checkRealm('http://localhost:5053/token', '127.0.0.1:5052', true)).toThrow(/plain http/);
    expect(() => checkRealm('file:///etc/passwd', 'reg.example', false)).toThrow(/scheme/);
    // Anonymous: nothing secret is sent.
    expect(checkRealm('http://auth.example/token', 'reg.example', false).host).toBe('auth.example');
  });
});

describe('docker config credentials', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kupenstack-dockercfg-'));
  const write = (name: string, doc: unknown): string => {
    const f = join(dir, name);
    writeFileSync(f, typeof doc === 'string' ? doc : JSON.stringify(doc));
    return f;
  };

  it('reads auth, username/password and identitytoken entries under any key spelling', () => {
    const f = write('config.json', {
      auths: {
        'https://index.docker.io/v1/': { auth: Buffer.from('hub:hubpass').toString('base64') },
        'http://127.0.0.1:5051': { username: 'kupenstack', password: 'testbed-secret' },
        'r.example:5000/v2/': { identitytoken: 'refresh-me' },
      },
    });
    const creds = DockerConfigCredentials.fromFile(f);
    expect(creds.lookup('docker.io')).toEqual({ kind: 'basic', username: 'hub', password: 'hubpass' });
    expect(creds.lookup('127.0.0.1:5051')).toEqual({ kind: 'basic', username: 'kupenstack', password: 'testbed-secret' });
    expect(creds.lookup('r.example:5000')).toEqual({ kind: 'identity-token', username: '<token>', token: 'refresh-me' });
    expect(creds.lookup('other.example')).toBeUndefined();
    expect(normalizeConfigKey('https://Registry.Example:443/v1/')).toBe('registry.example:443');
  });

  it('uses DOCKER_CONFIG only when it is set, and never a default file', () => {
    write('config.json', { auths: {} });
    expect(DockerConfigCredentials.fromEnvironment(undefined, {})).toBeUndefined();
    expect(DockerConfigCredentials.fromEnvironment(undefined, { DOCKER_CONFIG: dir })).toBeInstanceOf(DockerConfigCredentials);
  });

  it('explains unusable files without quoting their content', () => {
    const secret = 'hunter2-do-not-print';
    const bad = write('bad.json', `{"auths": {"x": {"password": "${secret}"`);
    let message = '';
    try {
      DockerConfigCredentials.fromFile(bad);
    } catch (err) {
      message = (err as Error).message;
      expect((err as { code: string }).code).toBe('oci.credentials');
    }
    expect(message).toMatch(/not valid JSON/);
    expect(message).not.toContain(secret);
    expect(() => DockerConfigCredentials.fromFile(join(dir, 'missing.json'))).toThrow(/ENOENT/);
    const helper = write('helper.json', { credHelpers: { 'ghcr.io': 'gh' } });
    expect(() => DockerConfigCredentials.fromFile(helper).lookup('ghcr.io')).toThrow(/credential helper/);
  });
});
