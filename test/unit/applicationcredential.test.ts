import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { applicationCredential, remoteOf } from '../../agent/kinds/applicationcredential/adapter.ts';
import type { AccessRule } from '../../agent/kinds/applicationcredential/access-rules.ts';
import { desiredFields } from '../../agent/kinds/applicationcredential/desired.ts';
import { formerSecrets } from '../../agent/kinds/applicationcredential/former-secrets.ts';
import { credentialState, keystoneExpiry, normaliseTime, pastGrace, retireTimes, rotationHash, type Generation } from '../../agent/kinds/applicationcredential/generations.ts';
import { secretData } from '../../agent/kinds/applicationcredential/secret.ts';
import type { Manifest } from '../../agent/model/manifest.ts';
import { difference } from '../../agent/plan/diff.ts';
import { EnvFileSecretResolver } from '../../agent/secrets/env-file.ts';

const min = 60_000;
const t0 = Date.parse('2026-11-27T12:00:00Z');

function manifest(spec: Record<string, unknown>, annotations?: Record<string, string>): Manifest {
  return {
    apiVersion: 'kupenstack.io/v1alpha1',
    kind: 'ApplicationCredential',
    metadata: { name: 'ccm', namespace: 'team-a', ...(annotations ? { annotations } : {}) },
    spec: { roles: ['member'], secretRef: { name: 'ccm-cloud' }, ...spec },
    source: { file: 'a.yaml', index: 0 } as unknown as Manifest['source'],
    address: 'team-a/ApplicationCredential/ccm',
  };
}

/** A generation as observe builds it from Keystone's user and credential. */
function gen(
  made: number,
  opts: { rotateAfter?: string; grace?: string; credential?: boolean; delivered?: boolean; expiresAt?: string; rotation?: string; roles?: string[]; secret?: string; accessRules?: AccessRule[]; unrestricted?: boolean } = {},
): Generation {
  const delivered = opts.delivered ?? opts.credential !== false;
  return {
    userId: `u${made}`,
    marker: { owner: 'o1', ref: 'ApplicationCredential/ccm', specHash: '00000000' },
    made,
    record: { made: new Date(made).toISOString(), rotateAfter: opts.rotateAfter ?? '', grace: opts.grace ?? '10m', expiresAt: '', rotation: opts.rotation ?? '', secret: opts.secret ?? 'ccm-cloud', ...(delivered ? { delivered } : {}) },
    ...(opts.credential === false
      ? {}
      : { credential: { id: `c${made}`, roles: opts.roles ?? ['member'], accessRules: opts.accessRules ?? [], unrestricted: opts.unrestricted ?? false, ...(opts.expiresAt ? { expiresAt: opts.expiresAt } : {}) } }),
  };
}

describe('ApplicationCredential: when to rotate', () => {
  it('the current credential is ok, missing (a create killed before it), expired, due by rotateAfter, or lost from its Secret', () => {
    expect(credentialState(gen(t0), t0 + 5 * min, true)).toBe('ok');
    expect(credentialState(gen(t0, { credential: false }), t0, true)).toBe('missing');
    expect(credentialState(gen(t0, { expiresAt: '2026-11-27T12:30:00.000000' }), t0 + 29 * min, true)).toBe('ok');
    expect(credentialState(gen(t0, { expiresAt: '2026-11-27T12:30:00.000000' }), t0 + 30 * min, true)).toBe('expired');
    expect(credentialState(gen(t0, { rotateAfter: '1h' }), t0 + 59 * min, true)).toBe('ok');
    expect(credentialState(gen(t0, { rotateAfter: '1h' }), t0 + 60 * min, true)).toBe('due');
    expect(credentialState(gen(t0), t0, false)).toBe('undelivered');
    // plan --base reads no Secret: it cannot tell, and does not claim a rotation.
    expect(credentialState(gen(t0), t0, undefined)).toBe('ok');
  });

  it('an older credential goes when the grace of the first newer one the Secret held is over; one that never reached the Secret goes at once', () => {
    const newestFirst = [gen(t0 + 30 * min, { grace: '5m' }), gen(t0 + 10 * min), gen(t0, { credential: false })];
    expect(retireTimes(newestFirst).map((r) => r.at)).toEqual([t0 + 35 * min, 0]);
    expect(pastGrace(newestFirst, t0 + 34 * min).map((g) => g.userId)).toEqual([`u${t0}`]);
    expect(pastGrace(newestFirst, t0 + 35 * min).map((g) => g.userId)).toEqual([`u${t0 + 10 * min}`, `u${t0}`]);
    // The current one is never retired, whatever its age.
    expect(pastGrace([gen(t0)], t0 + 1e9)).toEqual([]);
  });

  it('a newer credential whose Secret write failed neither starts the grace of the one clients hold nor outlives the next rotation', () => {
    // t0 delivered; t0+10m made but its Secret write failed; t0+20m made and delivered (grace 10m).
    const newestFirst = [gen(t0 + 20 * min), gen(t0 + 10 * min, { delivered: false }), gen(t0)];
    expect(retireTimes(newestFirst).map((r) => r.at)).toEqual([0, t0 + 30 * min]);
    // Before the delivered one, the stranded newest is current and the delivered older one stays: it is what the Secret holds.
    expect(pastGrace(newestFirst.slice(1), t0 + 1e9)).toEqual([]);
  });

  it('Keystone expires a credential at expiresAt, or sooner at rotateAfter + grace after it was made (one the agent cannot rotate still runs out)', () => {
    expect(keystoneExpiry({ rotateAfter: '', grace: '10m', expiresAt: '' }, t0)).toBeUndefined();
    expect(keystoneExpiry({ rotateAfter: '', grace: '10m', expiresAt: '2027-01-01T00:00:00Z' }, t0)).toBe('2027-01-01T00:00:00Z');
    expect(keystoneExpiry({ rotateAfter: '1h', grace: '10m', expiresAt: '' }, t0)).toBe('2026-11-27T13:10:00Z');
    expect(keystoneExpiry({ rotateAfter: '1h', grace: '10m', expiresAt: '2026-11-27T12:30:00Z' }, t0)).toBe('2026-11-27T12:30:00Z');
    expect(normaliseTime('2027-01-01T00:00:00.000000')).toBe(normaliseTime('2027-01-01T00:00:00Z'));
  });
});

describe('ApplicationCredential: plan', () => {
  const adapter = applicationCredential;

  it('a converged credential plans nothing; a new annotation, a role or a lost Secret each plan a rotation (an update, never a replace)', () => {
    const m = manifest({});
    const converged = remoteOf([gen(t0)], t0 + min, true);
    expect(difference(adapter, desiredFields(m), converged).updates).toEqual({});

    const rotate = manifest({}, { 'kupenstack.io/rotate': '2026-11-27' });
    expect(difference(adapter, desiredFields(rotate), converged).updates).toEqual({ rotation: rotationHash('2026-11-27') });
    const roles = manifest({ roles: ['reader', 'member'] });
    expect(difference(adapter, desiredFields(roles), converged).updates).toEqual({ roles: ['member', 'reader'] });
    expect(difference(adapter, desiredFields(m), remoteOf([gen(t0)], t0 + min, false)).updates).toEqual({ credential: 'ok' });
    for (const r of [rotate, roles]) expect(difference(adapter, desiredFields(r), converged).replace).toBe(false);
  });

  it('access rules and unrestricted as Keystone reports them: a change of either plans a rotation, a reordering of the rules nothing', () => {
    const ports = { service: 'network', method: 'GET', path: '/v2.0/ports' };
    const lbs = { service: 'load-balancer', method: 'GET', path: '/v2/lbaas/loadbalancers' };
    const ruled = remoteOf([gen(t0, { accessRules: [lbs, ports] })], t0 + min, true);
    expect(difference(adapter, desiredFields(manifest({ accessRules: [ports, lbs] })), ruled).updates).toEqual({});
    expect(difference(adapter, desiredFields(manifest({ accessRules: [ports] })), ruled).updates).toEqual({ accessRules: [ports] });
    expect(difference(adapter, desiredFields(manifest({})), ruled).updates).toEqual({ accessRules: [] });
    const plain = remoteOf([gen(t0)], t0 + min, true);
    expect(difference(adapter, desiredFields(manifest({ unrestricted: true })), plain).updates).toEqual({ unrestricted: true });
    expect(difference(adapter, desiredFields(manifest({ unrestricted: false })), plain).updates).toEqual({});
    expect(difference(adapter, desiredFields(manifest({ unrestricted: true })), plain).replace).toBe(false);
  });

  it('a Secret a changed secretRef left behind plans its deletion alone (no new credential)', () => {
    const m = manifest({ secretRef: { name: 'new-cloud' } });
    const moved = [gen(t0 + 20 * min, { secret: 'new-cloud' }), gen(t0)];
    expect(difference(adapter, desiredFields(m), remoteOf(moved, t0 + 25 * min, true, ['ccm-cloud'])).updates).toEqual({ formerSecrets: 0 });
    expect(difference(adapter, desiredFields(m), remoteOf(moved, t0 + 25 * min, true)).updates).toEqual({});
  });

  it('an old credential past its grace plans its deletion alone (no new credential)', () => {
    const m = manifest({});
    const two = [gen(t0 + 20 * min), gen(t0)];
    expect(difference(adapter, desiredFields(m), remoteOf(two, t0 + 25 * min, true)).updates).toEqual({});
    expect(difference(adapter, desiredFields(m), remoteOf(two, t0 + 30 * min, true)).updates).toEqual({ pastGrace: 0 });
  });

  it('status shows ids, times and the Secret name, and nothing of the secret', () => {
    const remote = remoteOf([gen(t0 + 20 * min, { expiresAt: '2027-01-01T00:00:00Z' }), gen(t0)], t0 + 25 * min, true);
    expect(remote.id).toBe(`c${t0 + 20 * min}`);
    expect(adapter.report!(remote)).toEqual({ userId: `u${t0 + 20 * min}`, secretName: 'ccm-cloud', rotatedAt: '2026-11-27T12:20:00.000Z', expiresAt: '2027-01-01T00:00:00Z', retiring: 1 });
  });
});

describe('ApplicationCredential: the Secret', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ks-appcred-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cloud = { authUrl: 'http://127.0.0.1:5000/v3', regionName: 'RegionOne', interface: 'public' as const, verify: true };

  it('holds a clouds.yaml a client uses as it is, and the id and secret as keys', () => {
    const data = secretData(cloud, 'id-1', 's3cr3t');
    expect(parse(data['clouds.yaml']!)).toEqual({
      clouds: {
        openstack: {
          auth_type: 'v3applicationcredential',
          auth: { auth_url: cloud.authUrl, application_credential_id: 'id-1', application_credential_secret: 's3cr3t' },
          region_name: 'RegionOne',
          interface: 'public',
          identity_api_version: 3,
        },
      },
    });
    expect(data).toMatchObject({ application_credential_id: 'id-1', application_credential_secret: 's3cr3t', auth_url: cloud.authUrl, region_name: 'RegionOne' });
  });

  it('standalone: files 0600 in a 0700 folder the resolver reads, swapped together, and deleted only when KupenStack made the folder', async () => {
    const resolver = new EnvFileSecretResolver({ secretsDir: dir });
    const place = { namespace: 'team-a', name: 'ccm-cloud' };
    await resolver.writer.put(place, { application_credential_id: 'id-1', application_credential_secret: 'one' }, 'o1');
    await resolver.writer.put(place, { application_credential_id: 'id-2', application_credential_secret: 'two' }, 'o1');
    const folder = join(dir, 'team-a', 'ccm-cloud');
    expect(await resolver.getAll(place)).toEqual({ application_credential_id: 'id-2', application_credential_secret: 'two' });
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(statSync(join(folder, 'application_credential_secret')).mode & 0o777).toBe(0o600);
    // Each key is a link through ..data, and only the newest version folder is left.
    expect(lstatSync(join(folder, 'application_credential_id')).isSymbolicLink()).toBe(true);
    expect(readdirSync(folder).filter((n) => n.startsWith('..') && n !== '..data')).toEqual([readlinkSync(join(folder, '..data'))]);

    await resolver.writer.removeOwned(place, 'another-owner');
    expect(await resolver.writer.read(place)).toBeDefined();
    await resolver.writer.removeOwned(place, 'o1');
    expect(await resolver.writer.read(place)).toBeUndefined();

    // A folder the operator made is refused (a manifest must not write into a Secret its author could not write),
    // before anything is made (check) and at the write; with the operator's consent file its other keys stay, and it is never deleted.
    const theirs = join(dir, 'team-a', 'theirs');
    mkdirSync(theirs, { recursive: true });
    writeFileSync(join(theirs, 'note'), 'kept');
    await expect(resolver.writer.check({ namespace: 'team-a', name: 'theirs' }, 'o1')).rejects.toThrow(/exists and KupenStack did not make it.*\.kupenstack-accept-credentials/);
    await expect(resolver.writer.put({ namespace: 'team-a', name: 'theirs' }, { application_credential_id: 'id-3' }, 'o1')).rejects.toThrow(/did not make it/);
    expect(readdirSync(theirs)).toEqual(['note']);
    writeFileSync(join(theirs, '.kupenstack-accept-credentials'), '');
    await resolver.writer.check({ namespace: 'team-a', name: 'theirs' }, 'o1');
    await resolver.writer.put({ namespace: 'team-a', name: 'theirs' }, { application_credential_id: 'id-3' }, 'o1');
    await resolver.writer.removeOwned({ namespace: 'team-a', name: 'theirs' }, 'o1');
    expect(readFileSync(join(theirs, 'note'), 'utf8')).toBe('kept');
    expect(readFileSync(join(theirs, 'application_credential_id'), 'utf8')).toBe('id-3');
  });

  it('after a secretRef change the old Secret is left behind only while it holds an older credential of this manifest, KupenStack made it and nobody opted it in', async () => {
    const resolver = new EnvFileSecretResolver({ secretsDir: join(dir, 'former') });
    const w = resolver.writer;
    const at = (name: string) => ({ namespace: 'team-a', name });
    const moved = [gen(t0 + 20 * min, { secret: 'new-cloud' }), gen(t0)];
    await w.put(at('new-cloud'), { application_credential_id: `c${t0 + 20 * min}` }, 'o1');
    await w.put(at('ccm-cloud'), { application_credential_id: `c${t0}` }, 'o1');
    expect(await formerSecrets(w, 'team-a', moved, true)).toEqual(['ccm-cloud']);
    // Until the new Secret holds the current one, the old Secret is what clients read.
    expect(await formerSecrets(w, 'team-a', moved, false)).toEqual([]);
    // Another owner's mark, or the operator's consent file: never KupenStack's to delete.
    rmSync(join(dir, 'former', 'team-a', 'ccm-cloud'), { recursive: true });
    await w.put(at('ccm-cloud'), { application_credential_id: `c${t0}` }, 'o2');
    expect(await formerSecrets(w, 'team-a', moved, true)).toEqual([]);
    rmSync(join(dir, 'former', 'team-a', 'ccm-cloud'), { recursive: true });
    await w.put(at('ccm-cloud'), { application_credential_id: `c${t0}` }, 'o1');
    writeFileSync(join(dir, 'former', 'team-a', 'ccm-cloud', '.kupenstack-accept-credentials'), '');
    expect(await formerSecrets(w, 'team-a', moved, true)).toEqual([]);
    rmSync(join(dir, 'former', 'team-a', 'ccm-cloud', '.kupenstack-accept-credentials'));
    // Another manifest's credential there now (the name was taken since): not this one's to delete.
    await w.put(at('ccm-cloud'), { application_credential_id: 'someone-elses' }, 'o1');
    expect(await formerSecrets(w, 'team-a', moved, true)).toEqual([]);
    // A Secret named by no older generation, or by the current one, is never counted.
    expect(await formerSecrets(w, 'team-a', [gen(t0 + 20 * min, { secret: 'new-cloud' })], true)).toEqual([]);
  });
});
