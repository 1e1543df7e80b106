import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadCloud } from '../../agent/openstack/clouds.ts';
import type { CloudConfigError } from '../../agent/openstack/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'ks-clouds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('clouds.yaml (openstacksdk format)', () => {
  it('reads a password cloud, merging secure.yaml beside it, with TLS verification on by default', () => {
    const sub = mkdtempSync(join(dir, 'a-'));
    writeFileSync(join(sub, 'clouds.yaml'), 'clouds:\n  prod:\n    auth:\n      auth_url: https://keystone.example:5000/v3/\n      username: agent\n      project_name: ops\n      user_domain_name: Default\n    region_name: RegionTwo\n    interface: internal\n');
    writeFileSync(join(sub, 'secure.yaml'), 'clouds:\n  prod:\n    auth:\n      password: s3cret-value\n');
    const c = loadCloud('prod', join(sub, 'clouds.yaml'));
    expect(c).toMatchObject({ authUrl: 'https://keystone.example:5000/v3', regionName: 'RegionTwo', interface: 'internal', verify: true, credentials: { type: 'password', username: 'agent', password: 's3cret-value' }, project: { name: 'ops', domainName: 'Default' } });
  });

  it('reads an application credential and an explicit verify: false', () => {
    const path = file('appcred.yaml', 'clouds:\n  ci:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: http://127.0.0.1:5000/v3\n      application_credential_id: abc\n      application_credential_secret: xyz\n    verify: false\n');
    expect(loadCloud('ci', path)).toMatchObject({ verify: false, credentials: { type: 'application-credential', id: 'abc', secret: 'xyz' } });
  });

  it('reads api_timeout (seconds) as the per-call timeout, and refuses one that is not a positive number', () => {
    const path = file('timeout.yaml', 'clouds:\n  t:\n    auth:\n      auth_url: http://127.0.0.1:5000/v3\n      username: u\n      password: p\n    api_timeout: 12.5\n  bad:\n    auth:\n      auth_url: http://127.0.0.1:5000/v3\n      username: u\n      password: p\n    api_timeout: soon\n');
    expect(loadCloud('t', path).timeoutMs).toBe(12_500);
    expect(() => loadCloud('bad', path)).toThrow(/cloud "bad": api_timeout must be a number of seconds above 0/);
  });

  it('names the file, the cloud and the fix, and never the secret', () => {
    const path = file('bad.yaml', 'clouds:\n  x:\n    auth:\n      auth_url: http://k/v3\n      username: u\n    auth_type: token\n  y:\n    auth:\n      auth_url: http://k/v3\n      password: hunter2-secret\n');
    const errorOf = (name: string): CloudConfigError => {
      try {
        loadCloud(name, path);
      } catch (err) {
        return err as CloudConfigError;
      }
      throw new Error('expected an error');
    };
    expect(errorOf('x').message).toMatch(/bad\.yaml, cloud "x": auth_type "token" is not supported; use password or v3applicationcredential/);
    expect(errorOf('y').message).toMatch(/auth\.username or auth\.user_id is missing/);
    expect(errorOf('y').message).not.toContain('hunter2');
    expect(errorOf('nope').message).toMatch(/cloud "nope" is not in .*bad\.yaml; it has: x, y/);
    expect(() => loadCloud('x', join(dir, 'missing.yaml'))).toThrow(/no clouds\.yaml found/);
  });
});
