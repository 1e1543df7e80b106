import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../agent/config/config-error.ts';
import { loadConfig } from '../../agent/sync/config-file.ts';
import { readSecret } from '../../agent/secrets/env-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'ks-config-'));
function file(text: string): string {
  const f = join(dir, `k${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(f, text);
  return f;
}

function error(text: string): string {
  const f = file(text);
  try {
    loadConfig(f);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message.replace(f, 'FILE');
  }
  throw new Error('expected a ConfigError');
}

describe('kupenstack.yaml syncs', () => {
  it('reads a git Sync with defaults from the Sync kind', () => {
    const c = loadConfig(
      file(`owner: lab
cloud: kupenstack-local
syncs:
  - name: main
    source:
      git:
        url: http://127.0.0.1:8180/git/demo.git
        ref: {branch: main}
        username: kupenstack
        passwordFile: /run/secrets/git
    webhook: {secretEnv: HOOK_SECRET}
`),
    );
    expect(c.owner).toBe('lab');
    expect(c.syncs).toEqual([
      {
        name: 'main',
        source: { git: { url: 'http://127.0.0.1:8180/git/demo.git', ref: { branch: 'main' }, credentials: { username: 'kupenstack', passwordFile: '/run/secrets/git' } } },
        path: './',
        intervalMs: 300_000,
        retryIntervalMs: 300_000,
        timeoutMs: 300_000,
        suspend: false,
        prune: true,
        dependsOn: [],
        wait: false,
        owner: 'lab',
        projectPrefix: 'ks-',
        webhook: { secret: { env: 'HOOK_SECRET' } },
      },
    ]);
  });

  it('gives each of several Syncs its own owner, and reads durations and schedules', () => {
    const c = loadConfig(
      file(`owner: lab
syncs:
  - name: a
    source: {directory: {path: /srv/a}}
    interval: 1m30s
    retryInterval: 10s
    timeout: 45s
    schedule: "@hourly"
    suspend: true
  - name: b
    source: {directory: {path: /srv/b}}
    path: envs/prod
    prune: false
    owner: lab-prod
`),
    );
    expect(c.syncs!.map((s) => [s.name, s.owner, s.intervalMs, s.retryIntervalMs, s.timeoutMs, s.schedule, s.suspend, s.prune, s.path])).toEqual([
      ['a', 'lab-a', 90_000, 10_000, 45_000, '@hourly', true, true, './'],
      ['b', 'lab-prod', 300_000, 300_000, 300_000, undefined, false, false, 'envs/prod'],
    ]);
  });

  it('names the file, the line and the key of each mistake', () => {
    expect(error('syncs:\n  - name: a\n    source: {directory: {path: /x}}\n    interval: 5x\n')).toBe('FILE:4:15 (syncs[0].interval): "5x" is not a duration; write e.g. 30s, 5m or 1h30m');
    expect(error('syncs:\n  - name: a\n    source: {git: {url: ftp://x/y, ref: {branch: main}}}\n')).toMatch(/^FILE:3:\d+ \(syncs\[0\]\.source\.git\.url\): url must start with https:\/\//);
    expect(error('syncs:\n  - name: a\n    source: {git: {url: https://u:p@x/y, ref: {branch: main}}}\n')).toMatch(/carries a password; put it in passwordEnv or passwordFile/);
    expect(error('syncs:\n  - name: a\n    source: {git: {url: https://x/y, ref: {branch: main, tag: v1}}}\n')).toMatch(/\(syncs\[0\]\.source\.git\.ref\): ref needs exactly one of branch, tag, semver or commit/);
    expect(error('syncs:\n  - name: a\n    sorce: {}\n')).toMatch(/^FILE:3:\d+ \(syncs\[0\]\.sorce\): unknown key "sorce"/);
    expect(error('syncs:\n  - name: a\n    source: {directory: {path: /x}}\n    schedule: "every day"\n')).toMatch(/\(syncs\[0\]\.schedule\): "every day" is not a cron schedule/);
    expect(error('syncs:\n  - name: a\n    source: {directory: {path: /x}}\n    path: ../up\n')).toMatch(/must stay inside the source/);
    expect(error('syncs:\n  - name: Main\n    source: {directory: {path: /x}}\n')).toMatch(/\(syncs\[0\]\.name\): Sync name "Main" must be a DNS label/);
    expect(error('syncs:\n  - name: a\n    source: {directory: {path: /x}}\n  - name: a\n    source: {directory: {path: /y}}\n')).toMatch(/^FILE:4:\d+ \(syncs\[1\]\.name\): two Syncs are named "a"/);
    expect(error('syncs:\n  - name: a\n    owner: o\n    source: {directory: {path: /x}}\n  - name: b\n    owner: o\n    source: {directory: {path: /y}}\n')).toMatch(/\(syncs\[1\]\.owner\): Syncs "a" and "b" have the same owner "o" and would prune each other's objects/);
    expect(error('syncs:\n  - name: a\n    source: {git: {url: https://x/y, ref: {branch: main}, username: me}}\n')).toMatch(/a user name without passwordEnv/);
    expect(error('syncs:\n  - name: a\n    source: {directory: {path: /x}}\n    webhook: {}\n')).toMatch(/webhook needs secretEnv/);
    expect(error('syncs: {name: a}\n')).toMatch(/^FILE:1:\d+ \(syncs\): "syncs" must be a list/);
    expect(error('owner: 3\n')).toMatch(/^FILE:1:\d+ \(owner\): "owner" must be a string/);
    expect(error('syncs:\n  - name: a\n   source: x\n')).toMatch(/^FILE:3:\d+: /);
  });

  it('validates each entry with the Sync kind\'s schema (Ajv) and reports kupenstack.yaml:line:column', () => {
    const d = mkdtempSync(join(dir, 'ajv-'));
    const f = join(d, 'kupenstack.yaml');
    writeFileSync(f, 'owner: lab\nsyncs:\n  - name: a\n    source: {directory: {path: /srv/a}}\n    massDeleteThreshold: 500\n    suspend: "yes"\n');
    // Both values break only the schema (maximum, type): no hand-written check knows these fields.
    expect(() => loadConfig(f)).toThrow(`${f}:5:26 (syncs[0].massDeleteThreshold): 500 must be <= 100; see the Sync kind's schema (sync.schema.json)`);
    writeFileSync(f, 'syncs:\n  - name: a\n    source: {directory: {path: /srv/a}}\n    suspend: "yes"\n');
    expect(() => loadConfig(f)).toThrow(`${f}:4:14 (syncs[0].suspend): "suspend" must be true or false`);
    writeFileSync(f, 'syncs:\n  - name: a\n    source: {directory: {path: /srv/a}}\n    webhook: {secretEnv: A, secretFile: /b}\n');
    expect(() => loadConfig(f)).toThrow(`${f}:4:14 (syncs[0].webhook): webhook needs exactly one of secretRef, secretEnv or secretFile`);
    writeFileSync(f, 'syncs:\n  - name: a\n    source: {git: {url: https://h/r.git, ref: {commit: abc}}}\n');
    expect(() => loadConfig(f)).toThrow(`${f}:3:56 (syncs[0].source.git.ref.commit): commit must be a full SHA (40 or 64 lower-case hex digits)`);
  });

  it('reads the Sync kind\'s secretRef forms into settings the secret resolver reads', () => {
    const c = loadConfig(file('syncs:\n  - name: a\n    source: {git: {url: https://h/r.git, ref: {branch: main}, secretRef: {name: git-creds}, verify: {mode: head, publicKeysSecretRef: {name: keys}}}}\n    webhook: {secretRef: {name: hook}}\n'));
    expect(c.syncs![0]!.source.git).toEqual({ url: 'https://h/r.git', ref: { branch: 'main' }, credentials: { secretRef: { name: 'git-creds' } }, verify: { mode: 'head', publicKeysSecretRef: { name: 'keys' } } });
    expect(c.syncs![0]!.webhook).toEqual({ secret: { name: 'hook', key: 'token' } });
    expect(error('syncs:\n  - name: a\n    source: {git: {url: https://h/r.git, ref: {branch: main}, secretRef: {name: g}, passwordEnv: P}}\n')).toMatch(/^FILE:3:\d+ \(syncs\[0\]\.source\.git\): give the Git password one way only/);
    expect(error('syncs:\n  - name: a\n    cloud: {secretRef: {name: c}}\n    source: {directory: {path: /x}}\n')).toMatch(/\(syncs\[0\]\.cloud\): a standalone Sync uses the cloud of kupenstack.yaml/);
  });

  it('refuses the in-cluster serviceAccountName/serviceAccountNamespace in a standalone Sync, naming the key and why', () => {
    expect(error('syncs:\n  - name: a\n    source: {directory: {path: /x}}\n    serviceAccountName: gitops\n')).toMatch(/^FILE:4:\d+ \(syncs\[0\]\.serviceAccountName\): "serviceAccountName" is for a Sync resource in the cluster .*remove "serviceAccountName" here$/);
    expect(error('syncs:\n  - name: a\n    source: {directory: {path: /x}}\n    serviceAccountNamespace: team-a\n')).toMatch(/\(syncs\[0\]\.serviceAccountNamespace\): "serviceAccountNamespace" is for a Sync resource in the cluster/);
  });

  it('keeps the settings without syncs working as before', () => {
    const c = loadConfig(file('owner: x1\nconcurrency: 4\nstateDir: /tmp/s\n'));
    expect(c).toMatchObject({ owner: 'x1', concurrency: 4, stateDir: '/tmp/s', projectPrefix: 'ks-' });
    expect(c.syncs).toBeUndefined();
  });

  it('reads secrets when used, naming where they were looked for but never their value', () => {
    const f = join(dir, 'secret');
    writeFileSync(f, 's3cret\n');
    expect(readSecret({ file: f }, 'webhook')).toBe('s3cret');
    process.env.KS_TEST_SECRET = 'from-env';
    expect(readSecret({ env: 'KS_TEST_SECRET' }, 'webhook')).toBe('from-env');
    expect(() => readSecret({ env: 'KS_TEST_UNSET_SECRET' }, 'Sync a webhook secret')).toThrow('Sync a webhook secret: environment variable KS_TEST_UNSET_SECRET is not set');
    expect(() => readSecret({ file: join(dir, 'missing') }, 'x')).toThrow(/cannot read .*missing: ENOENT/);
  });

  it('reads a Sync\'s default image signature policy, and refuses one without a public key', () => {
    const c = loadConfig(
      file(`syncs:
  - name: signed
    source: {directory: {path: /srv/a}}
    imageVerify:
      publicKey: {file: /etc/kupenstack/cosign.pub}
`),
    );
    expect(c.syncs![0]!.imageVerify).toEqual({ publicKey: { file: '/etc/kupenstack/cosign.pub' } });
    expect(error(`syncs:
  - name: signed
    source: {directory: {path: /srv/a}}
    imageVerify: {provider: cosign}
`)).toBe('FILE:4:18 (syncs[0].imageVerify): missing "publicKey"');
  });
});
