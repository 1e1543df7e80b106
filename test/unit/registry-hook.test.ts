import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { imagesFollowing, specFollows } from '../../agent/hooks/registry-match.ts';
import { handleRegistryHook, maxEventAgeMs, type RegistryHookFollower } from '../../agent/hooks/registry-hook.ts';
import type { RegistryPush } from '../../agent/hooks/registry-senders/push.ts';
import { DeliveryLog } from '../../agent/hooks/git-webhook.ts';

const secret = 'registry-hook-secret-42';
const now = Date.parse('2026-11-23T17:00:00Z');

/** A follower that records what it was told. */
function follower(name: string, follows: (p: RegistryPush) => boolean, withSecret: string | null = secret): RegistryHookFollower & { seen: RegistryPush[][]; triggered: number } {
  const f = {
    name,
    seen: [] as RegistryPush[][],
    triggered: 0,
    secret: () => Promise.resolve(withSecret ?? undefined),
    moved: (pushes: RegistryPush[]) => {
      f.seen.push(pushes);
      return pushes.some(follows);
    },
    trigger: () => void f.triggered++,
  };
  return f;
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
const bearer = { authorization: `Bearer ${secret}` };

// Payloads in the shapes each sender documents.
const distributionBody = (id: string, tag = '0.6', at = now) =>
  json({
    events: [
      { id: `${id}-blob`, timestamp: new Date(at).toISOString(), action: 'push', target: { mediaType: 'application/octet-stream', digest: `sha256:${'b'.repeat(64)}`, repository: 'team/cirros', url: 'http://127.0.0.1:5050/v2/team/cirros/blobs/sha256:bb' }, request: { host: '127.0.0.1:5050' } },
      { id, timestamp: new Date(at).toISOString(), action: 'push', target: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${'a'.repeat(64)}`, repository: 'team/cirros', tag, url: 'http://127.0.0.1:5050/v2/team/cirros/manifests/sha256:aa' }, request: { host: '127.0.0.1:5050', method: 'PUT' } },
    ],
  });

describe('registry notifications: what each sender says', () => {
  it('distribution: the manifest pushed under a tag, not the blob uploads; host from the request', async () => {
    const f = follower('s1', () => true);
    const a = await handleRegistryHook({ body: distributionBody('e1'), headers: { 'content-type': 'application/vnd.docker.distribution.events.v1+json', ...bearer }, query: new URLSearchParams() }, [f], new DeliveryLog(), now);
    expect(a).toMatchObject({ status: 202, result: 'triggered', sender: 'distribution', triggered: ['s1'] });
    expect(a.pushes).toEqual([{ host: '127.0.0.1:5050', repository: 'team/cirros', tag: '0.6', digest: `sha256:${'a'.repeat(64)}` }]);
    expect(f.triggered).toBe(1);
  });

  it('Harbor (default and CloudEvents formats), Quay, Docker Hub and GitHub package events', async () => {
    const cases: { body: Buffer; headers: Record<string, string>; query?: string; sender: string; push: RegistryPush }[] = [
      {
        sender: 'harbor',
        headers: { authorization: secret },
        body: json({ type: 'PUSH_ARTIFACT', occur_at: now / 1000, operator: 'admin', event_data: { resources: [{ digest: 'sha256:cc', tag: 'v1.2.0', resource_url: 'harbor.example.com/library/app:v1.2.0' }], repository: { name: 'app', namespace: 'library', repo_full_name: 'library/app', repo_type: 'public' } } }),
        push: { host: 'harbor.example.com', repository: 'library/app', tag: 'v1.2.0', digest: 'sha256:cc' },
      },
      {
        sender: 'harbor',
        headers: bearer,
        body: json({ specversion: '1.0', id: 'ce-1', type: 'harbor.artifact.pushed', time: new Date(now).toISOString(), data: { resources: [{ digest: 'sha256:dd', tag: 'latest', resource_url: 'harbor.example.com/proj/vm:latest' }], repository: { name: 'vm', namespace: 'proj', repo_full_name: 'proj/vm' } } }),
        push: { host: 'harbor.example.com', repository: 'proj/vm', tag: 'latest', digest: 'sha256:dd' },
      },
      {
        sender: 'quay',
        headers: bearer,
        body: json({ name: 'repository', repository: 'ns/disk', namespace: 'ns', docker_url: 'quay.io/ns/disk', homepage: 'https://quay.io/repository/ns/disk', updated_tags: ['stable'] }),
        push: { host: 'quay.io', repository: 'ns/disk', tag: 'stable' },
      },
      {
        sender: 'dockerhub',
        headers: bearer,
        body: json({ callback_url: 'https://registry.hub.docker.com/u/me/disk/hook/abc/', push_data: { pushed_at: now / 1000, pusher: 'me', tag: 'edge' }, repository: { repo_name: 'me/disk', namespace: 'me', name: 'disk' } }),
        push: { host: 'docker.io', repository: 'me/disk', tag: 'edge' },
      },
    ];
    const ghBody = json({ action: 'published', package: { name: 'disk', namespace: 'octo', package_type: 'CONTAINER', package_version: { version: 'sha256:ee', package_url: 'ghcr.io/octo/disk:1.0.0', container_metadata: { tag: { name: '1.0.0', digest: 'sha256:ee' } } } } });
    cases.push({
      sender: 'github',
      headers: { 'x-github-event': 'package', 'x-github-delivery': 'gh-1', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(ghBody).digest('hex')}` },
      body: ghBody,
      push: { host: 'ghcr.io', repository: 'octo/disk', tag: '1.0.0', digest: 'sha256:ee' },
    });
    expect(cases).toHaveLength(5);
    for (const c of cases) {
      const f = follower('s', () => true);
      const a = await handleRegistryHook({ body: c.body, headers: c.headers, query: new URLSearchParams(c.query ?? '') }, [f], new DeliveryLog(), now);
      expect({ sender: a.sender, result: a.result, pushes: a.pushes }).toEqual({ sender: c.sender, result: 'triggered', pushes: [c.push] });
    }
  });

  it('a pull, a delete or a push by digest triggers nothing', async () => {
    const f = follower('s', () => true);
    const pull = json({ events: [{ id: 'p1', timestamp: new Date(now).toISOString(), action: 'pull', target: { repository: 'team/cirros', tag: '0.6' } }] });
    const byDigest = json({ events: [{ id: 'p2', timestamp: new Date(now).toISOString(), action: 'push', target: { repository: 'team/cirros', digest: 'sha256:aa' } }] });
    const harborDelete = json({ type: 'DELETE_ARTIFACT', occur_at: now / 1000, event_data: { resources: [{ tag: 'x' }], repository: { repo_full_name: 'a/b' } } });
    const answers = await Promise.all([pull, byDigest, harborDelete].map((body) => handleRegistryHook({ body, headers: bearer, query: new URLSearchParams() }, [f], new DeliveryLog(), now)));
    expect(answers.map((a) => [a.status, a.result])).toEqual([
      [200, 'ignored'],
      [200, 'ignored'],
      [200, 'ignored'],
    ]);
    expect(f.triggered).toBe(0);
  });
});

describe('registry notifications: authentication and replays', () => {
  it('a wrong or missing secret is refused (401) and nothing is marked; the answer never shows the secret', async () => {
    const f = follower('s', () => true);
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: `Bearer ${secret}x` }]) {
      const a = await handleRegistryHook({ body: distributionBody('e2'), headers, query: new URLSearchParams('token=wrong') }, [f], new DeliveryLog(), now);
      expect(a.status).toBe(401);
      expect(JSON.stringify(a.body)).not.toContain(secret);
    }
    expect(f.seen).toEqual([]);
    const gh = await handleRegistryHook({ body: json({ action: 'published', package: {} }), headers: { 'x-github-event': 'package', authorization: `Bearer ${secret}` }, query: new URLSearchParams() }, [f], new DeliveryLog(), now);
    expect(gh.status).toBe(401); // GitHub must sign: a bearer token is not enough
    // A signature that is not the body's HMAC with the secret: signed with another secret, over another body, malformed, or the bare hex.
    const ghBody = json({ action: 'published', package: { name: 'disk', namespace: 'octo', package_type: 'CONTAINER', package_version: { version: 'sha256:ee', package_url: 'ghcr.io/octo/disk:1.0.0', container_metadata: { tag: { name: '1.0.0', digest: 'sha256:ee' } } } } });
    const hmac = (key: string, body: Buffer): string => createHmac('sha256', key).update(body).digest('hex');
    const wrongSignatures = [`sha256=${hmac('not-the-secret', ghBody)}`, `sha256=${hmac(secret, Buffer.concat([ghBody, Buffer.from(' ')]))}`, 'sha256=00', hmac(secret, ghBody), `sha1=${hmac(secret, ghBody)}`];
    // Five different signatures, none of them the right one (what the refusals below are about).
    expect(new Set(wrongSignatures).size).toBe(5);
    expect(wrongSignatures).not.toContain(`sha256=${hmac(secret, ghBody)}`);
    const signed = await Promise.all(
      wrongSignatures.map((signature) => handleRegistryHook({ body: ghBody, headers: { 'x-github-event': 'package', 'x-github-delivery': 'gh-wrong', 'x-hub-signature-256': signature }, query: new URLSearchParams() }, [f], new DeliveryLog(), now)),
    );
    expect(signed.map((a) => a.status)).toEqual([401, 401, 401, 401, 401]);
    // The same body with the right signature passes: the refusals above are the signature's, not the body's.
    const right = await handleRegistryHook({ body: ghBody, headers: { 'x-github-event': 'package', 'x-github-delivery': 'gh-right', 'x-hub-signature-256': `sha256=${hmac(secret, ghBody)}` }, query: new URLSearchParams() }, [follower('s', () => true)], new DeliveryLog(), now);
    expect(right.result).toBe('triggered');
    const none = await handleRegistryHook({ body: distributionBody('e3'), headers: bearer, query: new URLSearchParams() }, [follower('s', () => true, null)], new DeliveryLog(), now);
    expect(none.status).toBe(403);
  });

  it('only the followers whose secret the sender knows are told', async () => {
    const mine = follower('mine', () => true);
    const other = follower('other', () => true, 'another-secret');
    const a = await handleRegistryHook({ body: distributionBody('e4'), headers: bearer, query: new URLSearchParams() }, [mine, other], new DeliveryLog(), now);
    expect(a.triggered).toEqual(['mine']);
    expect(other.seen).toEqual([]);
  });

  it('a replayed delivery and an event older than the window are acknowledged and ignored', async () => {
    const log = new DeliveryLog();
    const f = follower('s', () => true);
    const req = { body: distributionBody('e5'), headers: bearer, query: new URLSearchParams() };
    expect((await handleRegistryHook(req, [f], log, now)).result).toBe('triggered');
    expect(await handleRegistryHook(req, [f], log, now)).toMatchObject({ status: 200, result: 'replayed' });
    const old = await handleRegistryHook({ ...req, body: distributionBody('e6', '0.6', now - maxEventAgeMs - 1000) }, [f], log, now);
    expect(old).toMatchObject({ status: 200, result: 'stale' });
    expect(f.triggered).toBe(1);
  });

  it('an event no follower follows is acknowledged and triggers nothing', async () => {
    const f = follower('s', (p) => p.repository === 'elsewhere/thing');
    const a = await handleRegistryHook({ body: distributionBody('e7'), headers: bearer, query: new URLSearchParams() }, [f], new DeliveryLog(), now);
    expect(a).toMatchObject({ status: 200, result: 'ignored' });
    expect(a.body.message).toMatch(/no Image follows 127\.0\.0\.1:5050\/team\/cirros:0\.6/);
    expect(f.triggered).toBe(0);
  });
});

/** An Image manifest of a Sync's revision, as the Sync runner matches it. */
const image = (name: string, oci: Record<string, unknown>): { address: string; kind: string; spec: unknown } => ({ address: `ns/Image/${name}`, kind: 'Image', spec: { source: { oci } } });

describe('which Images a push moves (hooks/registry-match.ts)', () => {
  it("exactly the Sync's Images following that registry, repository and tag or a range the tag satisfies", () => {
    const revision = [
      image('tag', { repository: '127.0.0.1:5050/team/cirros', tag: '0.6' }),
      image('range', { repository: '127.0.0.1:5050/team/cirros', semver: '^1.2' }),
      image('pinned', { repository: '127.0.0.1:5050/team/cirros', digest: `sha256:${'a'.repeat(64)}` }),
      // Not an Image: the same source shape follows nothing.
      { address: 'ns/Network/other', kind: 'Network', spec: { source: { oci: { repository: '127.0.0.1:5050/team/cirros', tag: '0.6' } } } },
      image('hub', { repository: 'cirros', tag: 'latest' }),
    ];
    expect(imagesFollowing(revision, [{ host: '127.0.0.1:5050', repository: 'team/cirros', tag: '0.7' }])).toEqual([]);
    expect(imagesFollowing(revision, [{ host: '127.0.0.1:5051', repository: 'team/cirros', tag: '0.6' }])).toEqual([]);
    expect(imagesFollowing(revision, [{ host: '127.0.0.1:5050', repository: 'team/cirros', tag: '0.6' }])).toEqual(['ns/Image/tag']);
    expect(imagesFollowing(revision, [{ repository: 'team/cirros', tag: 'v1.3.0' }])).toEqual(['ns/Image/range']);
    expect(imagesFollowing(revision, [{ host: 'docker.io', repository: 'library/cirros', tag: 'latest' }])).toEqual(['ns/Image/hub']);
    // Several pushes, and an Image in two revisions (the last good, the last applied): each once, sorted.
    expect(imagesFollowing([...revision, ...revision], [{ host: 'docker.io', repository: 'library/cirros', tag: 'latest' }, { repository: 'team/cirros', tag: 'v1.3.0' }])).toEqual([
      'ns/Image/hub',
      'ns/Image/range',
    ]);
  });

  it('an Image custom resource\'s spec follows a push by the same rules, before any run resolved it (the controller\'s watch cache)', () => {
    const push = [{ host: '127.0.0.1:5050', repository: 'team/cirros', tag: '0.6' }];
    expect(specFollows({ source: { oci: { repository: '127.0.0.1:5050/team/cirros', tag: '0.6' } } }, push)).toBe(true);
    expect(specFollows({ source: { oci: { repository: '127.0.0.1:5050/team/cirros', semver: '>=0.5.0-0 <1' } } }, [{ ...push[0]!, tag: '0.6.1' }])).toBe(true);
    expect(specFollows({ source: { oci: { repository: '127.0.0.1:5050/team/cirros', tag: '0.7' } } }, push)).toBe(false);
    expect(specFollows({ source: { oci: { repository: '127.0.0.1:5051/team/cirros', tag: '0.6' } } }, push)).toBe(false);
    expect(specFollows({ source: { oci: { repository: '127.0.0.1:5050/team/cirros', digest: `sha256:${'a'.repeat(64)}` } } }, push)).toBe(false);
    // No tag named: latest, as the resolver reads it; a URL image or a broken spec follows nothing.
    expect(specFollows({ source: { oci: { repository: '127.0.0.1:5050/team/cirros' } } }, [{ ...push[0]!, tag: 'latest' }])).toBe(true);
    expect(specFollows({ source: { url: { url: 'http://x/d.raw' } } }, push)).toBe(false);
    expect(specFollows({ source: { oci: { repository: 'UPPER/../x', tag: '0.6' } } }, push)).toBe(false);
    expect(specFollows(undefined, push)).toBe(false);
  });
});
