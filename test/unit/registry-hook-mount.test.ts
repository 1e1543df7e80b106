import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../agent/errors.ts';
import { DeliveryLog } from '../../agent/hooks/git-webhook.ts';
import { serveRegistryHook, type RegistryHookFollower, type RegistryHookOptions } from '../../agent/hooks/registry-hook.ts';
import { createLogger } from '../../agent/telemetry/logger.ts';
import { AgentMetrics } from '../../agent/telemetry/metrics.ts';

// serveRegistryHook is the registry twin of handleGitHook: both front ends'
// servers hand it the request and their followers; it reads the body,
// answers, counts per follower and logs, so neither mount repeats that glue.
const secret = 'registry-mount-secret-7';

function request(body: Buffer | string, url = '/hooks/registry', headers: Record<string, string> = { authorization: `Bearer ${secret}` }): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.method = 'POST';
  req.url = url;
  req.headers = { 'content-type': 'application/vnd.docker.distribution.events.v1+json', ...headers };
  req.push(typeof body === 'string' ? Buffer.from(body) : body);
  req.push(null);
  return req;
}

/** A distribution push of team/cirros:<tag>, dated now. */
const push = (id: string, tag = '0.6'): string =>
  JSON.stringify({
    events: [
      {
        id,
        timestamp: new Date().toISOString(),
        action: 'push',
        target: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${'a'.repeat(64)}`, repository: 'team/cirros', tag, url: 'http://127.0.0.1:5050/v2/team/cirros/manifests/sha256:aa' },
        request: { host: '127.0.0.1:5050', method: 'PUT' },
      },
    ],
  });

function mount(followers: RegistryHookOptions['followers'], extra: Partial<RegistryHookOptions> = {}): { o: RegistryHookOptions; logged: () => Record<string, unknown>[]; counted: () => Promise<string> } {
  const lines: string[] = [];
  const out = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) });
  const metrics = new AgentMetrics();
  const o: RegistryHookOptions = { followers, deliveries: new DeliveryLog(), metrics, logger: createLogger('info', 'json', out), label: '*', ...extra };
  return {
    o,
    logged: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    counted: async () => (await metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('kupenstack_webhook_deliveries_total{')).join('\n'),
  };
}

function follower(name: string, follows: (tag: string | undefined) => boolean, trigger: () => Promise<void> | void = () => undefined): RegistryHookFollower {
  return { name, secret: () => Promise.resolve(secret), moved: (pushes) => pushes.some((p) => follows(p.tag)), trigger };
}

describe('a registry notification as a front end mounts it (serveRegistryHook)', () => {
  it('a tag that moves: 202, the trigger awaited, one count per follower told, one line naming them', async () => {
    let done = false;
    const slow = follower('apps', () => true, async () => {
      await new Promise((r) => setTimeout(r, 20));
      done = true;
    });
    const m = mount(() => [slow, follower('nets', () => false)]);
    const a = await serveRegistryHook(request(push('m1')), m.o);
    expect(a.status).toBe(202);
    expect(a.body).toMatchObject({ result: 'triggered', syncs: ['apps'] });
    expect(done).toBe(true);
    expect(await m.counted()).toBe('kupenstack_webhook_deliveries_total{sync="apps",provider="registry-distribution",result="triggered"} 1');
    expect(m.logged()).toEqual([expect.objectContaining({ level: 30, msg: 'registry notification: tag moved, resolving now', sender: 'distribution', pushes: ['127.0.0.1:5050/team/cirros:0.6@sha256:' + 'a'.repeat(64)], syncs: ['apps'] })]);
  });

  it("a front end's own account of what moved goes into the line and the answer (the controller: Images and Syncs)", async () => {
    const m = mount(() => [follower('controller', () => true)], { label: 'controller', moved: () => ({ log: { images: ['team/Image/os'], syncs: [] }, body: { images: ['team/Image/os'] } }) });
    const a = await serveRegistryHook(request(push('m2')), m.o);
    expect(a.body).toMatchObject({ result: 'triggered', syncs: ['controller'], images: ['team/Image/os'] });
    expect(m.logged()[0]).toMatchObject({ msg: 'registry notification: tag moved, resolving now', images: ['team/Image/os'], syncs: [] });
    expect(await m.counted()).toBe('kupenstack_webhook_deliveries_total{sync="controller",provider="registry-distribution",result="triggered"} 1');
  });

  it('nothing follows the tag: 200 ignored, counted under the label, logged as ignored', async () => {
    const m = mount(() => [follower('apps', () => false)], { label: 'apps' });
    const a = await serveRegistryHook(request(push('m3')), m.o);
    expect(a).toMatchObject({ status: 200, body: { result: 'ignored' } });
    expect(await m.counted()).toBe('kupenstack_webhook_deliveries_total{sync="apps",provider="registry-distribution",result="ignored"} 1');
    expect(m.logged()).toEqual([expect.objectContaining({ msg: 'registry notification ignored', result: 'ignored' })]);
  });

  it('a wrong secret: 401, counted as rejected, one warning that shows no secret nor the ?token=', async () => {
    const m = mount(() => [follower('apps', () => true)]);
    const a = await serveRegistryHook(request(push('m4'), '/hooks/registry?token=wrong-token-1', { authorization: 'Bearer nope' }), m.o);
    expect(a.status).toBe(401);
    expect(await m.counted()).toBe('kupenstack_webhook_deliveries_total{sync="*",provider="registry-distribution",result="rejected"} 1');
    expect(m.logged()).toEqual([expect.objectContaining({ level: 40, msg: 'registry notification rejected', status: 401 })]);
    expect(JSON.stringify(m.logged())).not.toMatch(/registry-mount-secret-7|wrong-token-1/);
  });

  it('the URL names no follower: 404 with the front end\'s words, nothing counted or logged', async () => {
    const m = mount(() => ({ unknown: 'no Sync named "ghost"' }));
    expect(await serveRegistryHook(request(push('m5'), '/hooks/registry/ghost'), m.o)).toEqual({ status: 404, body: { error: 'no Sync named "ghost"' } });
    expect(await m.counted()).toBe('');
    expect(m.logged()).toEqual([]);
  });

  it('a secret that cannot be read: 500 naming the problem, one warning, nothing counted', async () => {
    const broken: RegistryHookFollower = { ...follower('apps', () => true), secret: () => Promise.reject(new UsageError('Sync apps webhook secret: file /x is missing')) };
    const m = mount(() => [broken]);
    expect(await serveRegistryHook(request(push('m6')), m.o)).toEqual({ status: 500, body: { error: 'Sync apps webhook secret: file /x is missing' } });
    expect(await m.counted()).toBe('');
    expect(m.logged()).toEqual([expect.objectContaining({ level: 40, msg: 'registry notification rejected', error: 'Sync apps webhook secret: file /x is missing' })]);
  });

  it('a body over the limit is refused (413) before anything is parsed', async () => {
    const m = mount(() => [follower('apps', () => true)]);
    const a = await serveRegistryHook(request(Buffer.alloc(1024 * 1024 + 1, 0x20)), m.o);
    expect(a.status).toBe(413);
    expect(m.logged()).toEqual([]);
  });
});
