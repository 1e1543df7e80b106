import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileCreateJournal } from '../../agent/status/create-journal.ts';

const dir = mkdtempSync(join(tmpdir(), 'ks-journal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the create journal', () => {
  it('lists what was sent and not answered, until its deadline, and forgets what landed', async () => {
    const j = new FileCreateJournal(dir, 'o1');
    const now = Date.now();
    const a = await j.begin(['ns/Network/a', 'ns/Network/b'], now + 60_000);
    const done = await j.begin(['ns/Network/c'], now + 60_000);
    await j.begin(['ns/Port/old'], now - 1);
    await j.end(done);
    // A process that comes after this one (a kill -9) reads the same file.
    expect(await new FileCreateJournal(dir, 'o1').landing()).toEqual(new Map([['ns/Network/a', now + 60_000], ['ns/Network/b', now + 60_000]]));
    // Compacted on read: the answered and the expired are gone from the file.
    expect(readFileSync(j.file, 'utf8').trim().split('\n')).toHaveLength(1);
    await j.landed(['ns/Network/a']);
    expect([...(await j.landing()).keys()]).toEqual(['ns/Network/b']);
    await j.landed(['ns/Network/b']);
    expect(await j.landing()).toEqual(new Map());
    await j.end(a);
    expect(readFileSync(j.file, 'utf8').trim().split('\n')).toEqual(['{"e":"' + a + '"}']);
  });

  it('reads a line cut by a crash as never written, and an absent file as empty', async () => {
    const j = new FileCreateJournal(dir, 'o2');
    expect(await j.landing()).toEqual(new Map());
    await j.begin(['ns/Subnet/s'], Date.now() + 60_000);
    appendFileSync(j.file, '{"b":"9.x.0","a":["ns/Subnet/t"],"u":');
    expect([...(await j.landing()).keys()]).toEqual(['ns/Subnet/s']);
  });
});
