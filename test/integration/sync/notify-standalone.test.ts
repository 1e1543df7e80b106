import { createHmac, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../agent/sync/config-file.ts';
import { EnvFileSecretResolver } from '../../../agent/secrets/env-file.ts';
import { DirectorySource } from '../../../agent/source/directory.ts';
import { SyncRunner } from '../../../agent/standalone/sync-runner.ts';
import { createLogger } from '../../../agent/telemetry/logger.ts';
import { AgentMetrics } from '../../../agent/telemetry/metrics.ts';
import { manifestHead as head, Workspace } from '../../support/apply.ts';
import { testCloudName } from '../../support/context.ts';

/*
 * The standalone agent's Sync with `notify:` read from kupenstack.yaml, the
 * secrets from an environment variable (HMAC key) and a file (the Slack
 * address), against the real OpenStack and loopback receivers: a signed
 * generic webhook (checked with the documented HMAC) and a Slack-format
 * receiver (text required, as Slack's incoming webhooks do). Egress policy is
 * off standalone by default (the operator wrote the file).
 */
let ws: Workspace;
const hmacKey = randomBytes(12).toString('hex');
const slackPath = `/services/T1/B1/${randomBytes(8).toString('hex')}`;
const hooks: { event: string; revision: string; diagnostic?: string; object?: string; summary?: string }[] = [];
const slack: string[] = [];
const bad: string[] = [];
const receiver = createServer((req, res) => {
  let raw = '';
  req.on('data', (c: Buffer) => (raw += c.toString()));
  req.on('end', () => {
    if (req.url === '/hook' && req.headers['x-kupenstack-signature'] === `sha256=${createHmac('sha256', hmacKey).update(raw).digest('hex')}`) hooks.push(JSON.parse(raw) as (typeof hooks)[number]);
    else if (req.url === slackPath && typeof (JSON.parse(raw) as { text?: unknown }).text === 'string') slack.push((JSON.parse(raw) as { text: string }).text);
    else bad.push(`${req.url ?? ''} ${raw}`);
    res.writeHead(bad.length > 0 ? 400 : 200).end('ok');
  });
});

beforeAll(async () => {
  ws = new Workspace();
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
}, 60_000);
afterAll(async () => {
  await ws.dispose();
  await new Promise<void>((r) => receiver.close(() => r()));
}, 120_000);

describe('standalone notify: from kupenstack.yaml', () => {
  it('a rejected revision reaches a signed webhook and Slack with the file and line; the fixed one is announced applied once, not again on a drift run', async () => {
    const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    const slackFile = join(ws.dir, 'slack-url');
    writeFileSync(slackFile, `${base}${slackPath}\n`);
    const file = join(ws.dir, 'kupenstack.yaml');
    writeFileSync(file, `owner: ${ws.owner}\ncloud: ${testCloudName}\nsyncs:\n  - name: nt\n    source: {directory: {path: ${ws.repo}}}\n    notify:\n      - {provider: webhook, url: '${base}/hook', secretEnv: KS_NOTIFY_HMAC}\n      - {provider: slack, secretFile: ${slackFile}, events: [rejected]}\n`);
    const sync = loadConfig(file).syncs![0]!;
    const secrets = new EnvFileSecretResolver({ secretsDir: join(ws.dir, 'secrets'), env: { KS_NOTIFY_HMAC: hmacKey } });
    let logs = '';
    const logger = createLogger('debug', 'json', new Writable({ write: (c: Buffer, _e, cb) => ((logs += c.toString()), cb()) }));
    const runner = await SyncRunner.create(sync, { config: ws.config, cloud: testCloudName, source: new DirectorySource({ directory: ws.repo }), logger, metrics: new AgentMetrics(), secrets, cloudStep: {}, images: ws.images });
    const signal = new AbortController().signal;

    ws.write({ 'nt/net.yaml': `${head('Network', 'net', 'nt')}  mtu: lots\n` });
    expect(await runner.run('startup', signal)).toBe(false);
    const rejected = runner.status.rejectedRevision!;
    const until = async (what: () => boolean): Promise<void> => {
      for (let i = 0; !what(); i++) {
        if (i > 100) throw new Error(`receivers got ${JSON.stringify({ hooks, slack, bad })}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await until(() => hooks.length === 2 && slack.length === 1);
    expect(hooks.map((h) => [h.event, h.revision])).toEqual([['started', rejected], ['rejected', rejected]]);
    expect(hooks[1]!.diagnostic).toMatch(/^nt\/net\.yaml:7:\d+: error \[schema\./);
    expect(slack[0]).toMatch(/^:x: \*Sync nt: rejected .*\nrevision .* rejected, nothing from it applied\n`nt\/net\.yaml:7:\d+: error /);

    ws.write({ 'nt/net.yaml': `${head('Network', 'net', 'nt')}  mtu: 1400\n` });
    expect(await runner.run('watch', signal)).toBe(true);
    // A timed run of the applied revision (drift) announces nothing again.
    expect(await runner.run('interval', signal)).toBe(true);
    // Drift made in Neutron behind the agent's back: the next timed run sets the MTU back and the webhook hears of it, naming the object and the field.
    const neutron = ws.cloud.client('network');
    const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${sync.projectPrefix}nt` });
    const mtuOf = async (): Promise<{ id: string; mtu: number }> => (await neutron.list<{ id: string; mtu: number }>('/networks', 'networks', { project_id: project!.id, name: 'net' }))[0]!;
    await neutron.put(`/networks/${(await mtuOf()).id}`, { network: { mtu: 1300 } });
    expect(await runner.run('interval', signal)).toBe(true);
    expect((await mtuOf()).mtu).toBe(1400);
    await until(() => hooks.some((h) => h.event === 'drift-corrected'));
    expect(hooks.filter((h) => h.event === 'drift-corrected')).toEqual([
      { event: 'drift-corrected', sync: 'nt', revision: runner.status.lastAppliedRevision, object: 'nt/Network/net', summary: 'nt/Network/net: set mtu back to the declared values', severity: 'warning', at: expect.any(String) as string },
    ]);
    // Then a new bad revision: each target's notices leave in order, so one more applied would sit before its started.
    ws.write({ 'nt/net.yaml': `${head('Network', 'net', 'nt')}  mtu: many\n` });
    expect(await runner.run('watch', signal)).toBe(false);
    const again = runner.status.rejectedRevision!;
    await until(() => hooks.some((h) => h.event === 'rejected' && h.revision === again) && slack.length === 2);
    const applied = runner.status.lastAppliedRevision!;
    expect(hooks.slice(2).filter((h) => h.event !== 'drift-corrected').map((h) => [h.event, h.revision])).toEqual([['started', applied], ['applied', applied], ['started', again], ['rejected', again]]);
    expect(bad).toEqual([]);
    expect(logs).not.toContain(hmacKey);
    expect(logs).not.toContain(slackPath);
  });
});
