import { describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../agent/events/events.ts';
import { dedupKey, headline, makeNotice } from '../../agent/notify/notice.ts';
import { objectNotice } from '../../agent/notify/object-notice.ts';
import { gitea } from '../../agent/notify/providers/gitea.ts';
import { github } from '../../agent/notify/providers/github.ts';
import { gitlab } from '../../agent/notify/providers/gitlab.ts';
import { slack } from '../../agent/notify/providers/slack.ts';
import { webhook } from '../../agent/notify/providers/webhook.ts';
import { Throttle } from '../../agent/notify/throttle.ts';

const revision = `main@sha1:${'b'.repeat(40)}`;
const at = new Date(0).toISOString();
const ev = (e: Partial<EngineEvent> & Pick<EngineEvent, 'type' | 'address' | 'reason' | 'message'>): EngineEvent => ({ severity: 'normal', at, ...e });
const forge = { url: 'https://forge.example/api', repository: 'team/infra', secret: 't' };

describe('engine and cloud events as notices (object-notice.ts)', () => {
  it('drift corrected, VM healed and a moved image tag become notices naming the object; other engine events do not', () => {
    const drift = objectNotice('nets', revision, ev({ type: 'drift-corrected', address: 'team/Network/app', kind: 'Network', reason: 'DriftCorrected', message: 'set mtu back to the declared values', severity: 'warning' }));
    expect(drift).toMatchObject({ event: 'drift-corrected', sync: 'nets', revision, object: 'team/Network/app', summary: 'team/Network/app: set mtu back to the declared values', severity: 'warning' });
    const healed = objectNotice('vms', revision, ev({ type: 'healed', address: 'team/VirtualMachine/web', reason: 'HealRebooted', message: 'reboot (attempt 1) because server is in ERROR' }));
    expect(healed).toMatchObject({ event: 'healed', object: 'team/VirtualMachine/web', summary: 'team/VirtualMachine/web: HealRebooted: reboot (attempt 1) because server is in ERROR' });
    const rolled = objectNotice('imgs', revision, ev({ type: 'updated', address: 'team/Image/os', reason: 'TagMoved', message: 'registry/os:stable moved from sha256:1 to sha256:2 (digest)' }));
    expect(rolled).toMatchObject({ event: 'image-rolled', object: 'team/Image/os', severity: 'info' });
    for (const e of [ev({ type: 'updated', address: 'team/Network/app', reason: 'Updated', message: 'mtu' }), ev({ type: 'created', address: 'team/Network/app', reason: 'Created', message: 'created' })]) expect(objectNotice('nets', revision, e)).toBeUndefined();
  });

  it('the cloud: the backup and each step of an upgrade, and the failure that stops it; nothing outside an upgrade', () => {
    const cloud = '/OpenStackCloud/cloud';
    const step = ev({ type: 'updated', address: cloud, kind: 'OpenStackCloud', reason: 'StepStarted', message: 'step keystone started' });
    expect(objectNotice('infra', revision, step, { upgrading: true })).toMatchObject({ event: 'upgrade-step', object: cloud, summary: `${cloud}: step keystone started`, severity: 'info' });
    expect(objectNotice('infra', revision, ev({ ...step, reason: 'BackupDone', message: 'backup before the upgrade 2024.1 → 2024.2: job/b' }), { upgrading: true })?.event).toBe('upgrade-step');
    expect(objectNotice('infra', revision, ev({ ...step, reason: 'GatePassed', message: 'gate of step keystone passed' }), { upgrading: true })).toBeUndefined();
    const failed = objectNotice('infra', revision, ev({ type: 'failed', address: cloud, reason: 'StepFailed', message: 'keystone/Job/keystone-db-sync: BackoffLimitExceeded', severity: 'warning' }), { upgrading: true });
    expect(failed).toMatchObject({ event: 'upgrade-failed', severity: 'error', diagnostic: 'keystone/Job/keystone-db-sync: BackoffLimitExceeded' });
    // An install's steps and failures are not an upgrade's (the Sync's own outcome tells of those).
    expect(objectNotice('infra', revision, step, { upgrading: false })).toBeUndefined();
    expect(objectNotice('infra', revision, ev({ type: 'failed', address: cloud, reason: 'StepFailed', message: 'x', severity: 'warning' }), { upgrading: false })).toBeUndefined();
  });

  it('object events set no commit status (the commit status is the revision\'s outcome); the webhook and Slack carry the object', () => {
    const drift = makeNotice('drift-corrected', 'nets', revision, 'team/Network/app: set mtu back to the declared values', undefined, 'team/Network/app');
    expect([github(drift, forge), gitlab(drift, forge), gitea(drift, forge)]).toEqual([undefined, undefined, undefined]);
    expect(github(makeNotice('applied', 'nets', revision, 'applied'), forge)).toBeDefined();
    expect(JSON.parse(webhook(drift, { url: 'https://hooks.example/in' })!.body)).toMatchObject({ event: 'drift-corrected', object: 'team/Network/app' });
    expect(headline(drift)).toBe('Sync nets: drift corrected in team/Network/app');
    expect((JSON.parse(slack(drift, { url: 'https://hooks.slack.example/x' })!.body) as { text: string }).text).toMatch(/^:warning: \*Sync nets: drift corrected in team\/Network\/app\*\n/);
  });

  it('dedup: the same change of the same object goes out once per window; another object, or another change, goes', () => {
    const t = new Throttle({ windowMs: 60_000, perMinute: 100 });
    const n = (object: string, summary: string) => makeNotice('drift-corrected', 'nets', revision, summary, undefined, object);
    expect(t.judge(dedupKey(n('team/Network/a', 'team/Network/a: set mtu back')), 0)).toBe('send');
    expect(t.judge(dedupKey(n('team/Network/a', 'team/Network/a: set mtu back')), 1000)).toBe('duplicate');
    expect(t.judge(dedupKey(n('team/Network/b', 'team/Network/b: set mtu back')), 1000)).toBe('send');
    expect(t.judge(dedupKey(n('team/Network/a', 'team/Network/a: set description back')), 1000)).toBe('send');
    // A revision's outcome keeps its key: once per event, Sync and revision.
    expect(dedupKey(makeNotice('failed', 'nets', revision, 'x'))).toBe(`failed nets ${revision}`);
  });
});
