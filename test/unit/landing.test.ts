import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { afterLanding } from '../../agent/act/landing.ts';
import type { EngineEvent } from '../../agent/events/events.ts';
import { FileCreateJournal } from '../../agent/status/create-journal.ts';

/*
 * The journal wait (audit M4): a run after a kill -9 observes again until the
 * creates the dead process sent are there, or their deadline passed. The
 * journal is the real file journal; "OpenStack" is the list of addresses each
 * observe finds, growing as the dead process's creates land.
 */
function journal(): FileCreateJournal {
  return new FileCreateJournal(mkdtempSync(join(tmpdir(), 'ks-landing-')), 'owner');
}

describe('a run waits for the creates a dead process sent', () => {
  it('observes again until every one landed, says why it waits, and records them landed', async () => {
    const j = journal();
    const entry = await j.begin(['ns/Network/a', 'ns/Network/b'], Date.now() + 60_000);
    expect(entry).not.toBe('');
    // The dead process never wrote its end line. OpenStack makes a at the 2nd observe, b at the 4th.
    const appear = [[], ['ns/Network/a'], ['ns/Network/a'], ['ns/Network/a', 'ns/Network/b']];
    let looks = 0;
    const events: EngineEvent[] = [];
    const result = await afterLanding({
      journal: j,
      declared: new Set(['ns/Network/a', 'ns/Network/b', 'ns/Network/c']),
      look: () => Promise.resolve({ result: looks, owned: new Set(appear[Math.min(looks++, 3)]) }),
      events: (e) => void events.push(e),
      revision: 'r1',
      everyMs: 5,
    });
    expect(looks).toBe(4);
    expect(result).toBe(3);
    expect(events.map((e) => [e.type, e.reason])).toEqual([['held', 'CreatesInFlight']]);
    expect(events[0]!.message).toMatch(/^waiting up to \d+ s for 2 creates an earlier run sent and never saw answered \(ns\/Network\/a, ns\/Network\/b\)/);
    // Landed: the next run waits for nothing.
    expect(await j.landing()).toEqual(new Map());
  });

  it('gives up on an entry whose deadline passed, and never waits for what the revision no longer declares', async () => {
    const j = journal();
    // The wait's clock is the test's: each look moves it 20 s on, so a busy machine's slow journal writes cannot
    // put the deadline behind the first look (a real 40 ms deadline did, at load 4).
    const started = Date.now();
    let clock = started;
    await j.begin(['ns/Network/late'], started + 50_000);
    await j.begin(['ns/Network/gone'], started + 600_000);
    let looks = 0;
    const look = (): Promise<{ result: number; owned: Set<string> }> => {
      clock += 20_000;
      return Promise.resolve({ result: looks++, owned: new Set<string>() });
    };
    await afterLanding({ journal: j, declared: new Set(['ns/Network/late']), look, events: () => undefined, revision: 'r2', everyMs: 10, now: () => clock });
    // Looked at +20 s and +40 s (still before the deadline), gave up at +60 s: 'gone' (600 s) was never waited for.
    expect(looks).toBe(3);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('with no journal, or nothing in flight, it observes once', async () => {
    let looks = 0;
    await afterLanding({ journal: undefined, declared: new Set(['x']), look: () => Promise.resolve({ result: looks++, owned: new Set<string>() }), events: () => undefined, revision: 'r3', everyMs: 5 });
    await afterLanding({ journal: journal(), declared: new Set(['x']), look: () => Promise.resolve({ result: looks++, owned: new Set<string>() }), events: () => undefined, revision: 'r3', everyMs: 5 });
    expect(looks).toBe(2);
  });

  it('in requeue mode (the controller) looks once and answers waiting instead of waiting; the journal keeps the entry', async () => {
    const j = journal();
    await j.begin(['ns/Network/a'], Date.now() + 60_000);
    let looks = 0;
    const events: EngineEvent[] = [];
    const held = await afterLanding({ journal: j, declared: new Set(['ns/Network/a']), look: () => Promise.resolve({ result: looks++, owned: new Set<string>() }), events: (e) => void events.push(e), revision: 'r4', requeue: true });
    expect(held).toMatchObject({ waiting: { afterMs: 2_000 } });
    expect(looks).toBe(1);
    expect(events.map((e) => e.reason)).toEqual(['CreatesInFlight']);
    expect([...(await j.landing()).keys()]).toEqual(['ns/Network/a']);
    // Once it landed, the next run goes on and records it landed.
    await expect(afterLanding({ journal: j, declared: new Set(['ns/Network/a']), look: () => Promise.resolve({ result: 'run', owned: new Set(['ns/Network/a']) }), events: () => undefined, revision: 'r4', requeue: true })).resolves.toBe('run');
    expect(await j.landing()).toEqual(new Map());
  });
});
