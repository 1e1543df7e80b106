import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { formatReference, formatRequest, isLoopbackHost, parseReference, parseRepository, toDiskRequest } from '../../../oci/reference.ts';

describe('OCI references', () => {
  it('splits registry, repository, tag and digest', () => {
    expect(parseReference('127.0.0.1:5050/vm/cirros:0.6.2')).toEqual({ registry: '127.0.0.1:5050', repository: 'vm/cirros', tag: '0.6.2' });
    const d = `sha256:${'a'.repeat(64)}`;
    expect(parseReference(`ghcr.io/org/img@${d}`)).toEqual({ registry: 'ghcr.io', repository: 'org/img', digest: d });
    expect(parseReference(`localhost/x:1@${d}`)).toEqual({ registry: 'localhost', repository: 'x', tag: '1', digest: d });
  });

  it('reads Docker Hub short names like docker does', () => {
    expect(parseReference('ubuntu')).toEqual({ registry: 'docker.io', repository: 'library/ubuntu' });
    expect(parseReference('kubevirt/cirros-container-disk-demo:latest')).toEqual({ registry: 'docker.io', repository: 'kubevirt/cirros-container-disk-demo', tag: 'latest' });
    expect(parseReference('index.docker.io/library/alpine:3').registry).toBe('docker.io');
  });

  it('refuses malformed references with a hint', () => {
    expect(() => parseReference('http://127.0.0.1:5050/a:1')).toThrow(/leave out the scheme/);
    expect(() => parseReference('127.0.0.1:5050/UPPER:1')).toThrow(/not a repository name/);
    expect(() => parseReference('r.example/a@sha256:1234')).toThrow(/not a sha256/);
    expect(() => parseReference('r.example/a:-bad')).toThrow(/not a valid tag/);
    expect(() => parseReference('r.example/a/../b:1')).toThrow(/not a repository/);
  });

  it('round-trips and separates repository-only forms', () => {
    const text = '127.0.0.1:5050/vm/cirros:1';
    expect(formatReference(parseReference(text))).toBe(text);
    expect(parseRepository('127.0.0.1:5050/vm/cirros')).toEqual({ registry: '127.0.0.1:5050', repository: 'vm/cirros' });
    expect(() => parseRepository('127.0.0.1:5050/vm/cirros:1')).toThrow(/repository only/);
  });

  it('knows loopback hosts', () => {
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('127.4.5.6')).toBe(true);
    expect(isLoopbackHost('[::1]')).toBe(true);
    expect(isLoopbackHost('localhost')).toBe(true);
    expect(isLoopbackHost('10.0.0.1')).toBe(false);
    expect(isLoopbackHost('127.0.0.1.evil.example')).toBe(false);
  });
});

describe('toDiskRequest (image import, inspect) and formatRequest (plans, logs)', () => {
  const d = `sha256:${'c'.repeat(64)}`;
  it('reads Docker Hub short names as push and inspect do', () => {
    expect(toDiskRequest('cirros:0.6')).toEqual({ repository: 'docker.io/library/cirros', tag: '0.6' });
    expect(toDiskRequest('library/cirros:0.6')).toEqual({ repository: 'docker.io/library/cirros', tag: '0.6' });
    expect(toDiskRequest('cirros')).toEqual({ repository: 'docker.io/library/cirros', tag: 'latest' });
  });

  it('keeps registries, and a digest wins over a tag', () => {
    expect(toDiskRequest('127.0.0.1:5050/vm/cirros:0.6')).toEqual({ repository: '127.0.0.1:5050/vm/cirros', tag: '0.6' });
    expect(toDiskRequest(`127.0.0.1:5050/vm/cirros:0.6@${d}`)).toEqual({ repository: '127.0.0.1:5050/vm/cirros', digest: d });
    expect(() => toDiskRequest('http://127.0.0.1:5050/vm/cirros:0.6')).toThrow(/leave out the scheme/);
  });

  it('names a request as the user wrote its repository', () => {
    expect(formatRequest({ repository: '127.0.0.1:5050/vm/cirros', tag: '0.6' })).toBe('127.0.0.1:5050/vm/cirros:0.6');
    expect(formatRequest({ repository: '127.0.0.1:5050/vm/cirros', tag: '0.6', digest: d })).toBe(`127.0.0.1:5050/vm/cirros@${d}`);
    expect(formatRequest({ repository: '127.0.0.1:5050/vm/cirros' })).toBe('127.0.0.1:5050/vm/cirros:latest');
  });
});

describe('kupenstack image import', () => {
  it('reads its reference with the same parser, before any cloud is asked', () => {
    const r = spawnSync(process.execPath, ['agent/cli/main.ts', 'image', 'import', 'http://127.0.0.1:5050/vm/cirros:0.6', '--project', 'p'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('kupenstack: "http://127.0.0.1:5050/vm/cirros:0.6" is not an OCI reference (leave out the scheme; use --insecure for a plain-HTTP registry); write registry/repository:tag or registry/repository@sha256:<64 hex>\n');
  });
});
