import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EarlyJournal, earlyJournal } from '../../../agent/controller/resources/early-journal.ts';
import { FileCreateJournal, type CreateJournal, type JournalLine } from '../../../agent/status/create-journal.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The standalone journal (one file, one line per record) under the early one: what it wrote is read back line by line. */
function fileJournal(): { journal: FileCreateJournal; lines: () => JournalLine[] } {
  const dir = mkdtempSync(join(tmpdir(), 'ks-early-'));
  dirs.push(dir);
  const journal = new FileCreateJournal(dir, 'o');
  const lines = (): JournalLine[] => {
    try {
      return readFileSync(journal.file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as JournalLine);
    } catch {
      return [];
    }
  };
  return { journal, lines };
}

const until = (): number => Date.now() + 60_000;

describe('EarlyJournal (a targeted run records its new objects while it observes)', () => {
  it('stores one entry before any create asks; the creates of its addresses find it stored and write nothing; the run ends it', async () => {
    const { journal, lines } = fileJournal();
    const early = new EarlyJournal(journal, ['ns/Network/a', 'ns/Network/b'], until());
    const single = await early.begin(['ns/Network/a'], until());
    const bulk = await early.begin(['ns/Network/a', 'ns/Network/b'], until());
    // The early line is stored before a begin of its addresses resolves: a kill after it leaves the entry.
    expect(lines()).toEqual([expect.objectContaining({ a: ['ns/Network/a', 'ns/Network/b'] })]);
    await early.end(single);
    await early.end(bulk);
    expect(lines()).toHaveLength(1);
    await early.close();
    const [begun, ended] = lines();
    expect(ended).toEqual({ e: begun!.b });
    expect(lines()).toHaveLength(2);
  });

  it('does not wait for itself: landing is what the journal held before the early line', async () => {
    const { journal } = fileJournal();
    await journal.begin(['ns/Network/dead'], until());
    const early = new EarlyJournal(journal, ['ns/Network/a'], until());
    await early.begin(['ns/Network/a'], until());
    expect([...(await early.landing()).keys()]).toEqual(['ns/Network/dead']);
    // The journal itself now holds both: a process after a kill would wait for the early one too.
    expect([...(await journal.landing()).keys()].sort()).toEqual(['ns/Network/a', 'ns/Network/dead']);
  });

  it('records a create of another address as it leaves, as the journal does', async () => {
    const { journal, lines } = fileJournal();
    const early = new EarlyJournal(journal, ['ns/Network/a'], until());
    await early.begin(['ns/Network/a'], until());
    const other = await early.begin(['ns/Network/a', 'ns/Subnet/s'], until());
    expect(lines().map((l) => l.a)).toEqual([['ns/Network/a'], ['ns/Network/a', 'ns/Subnet/s']]);
    await early.end(other);
    expect(lines().at(-1)).toEqual({ e: other });
  });

  it('keeps its entry when a create of it lost its answer (begun, never ended): it may still land', async () => {
    const { journal } = fileJournal();
    const early = new EarlyJournal(journal, ['ns/Network/a'], until());
    await early.begin(['ns/Network/a'], until());
    await early.close();
    expect([...(await journal.landing()).keys()]).toEqual(['ns/Network/a']);
  });

  it('an early write that fails leaves each create to record itself', async () => {
    const { journal, lines } = fileJournal();
    let fail = true;
    const flaky: CreateJournal = {
      begin: (a, u) => (fail ? Promise.reject(new Error('API server unavailable')) : journal.begin(a, u)),
      end: (e) => journal.end(e),
      landing: () => journal.landing(),
      landed: (a) => journal.landed(a),
    };
    const early = new EarlyJournal(flaky, ['ns/Network/a'], until());
    await expect(early.begin(['ns/Network/a'], until())).rejects.toThrow('API server unavailable');
    fail = false;
    const entry = await early.begin(['ns/Network/a'], until());
    expect(lines()).toEqual([expect.objectContaining({ b: entry, a: ['ns/Network/a'] })]);
  });

  it('is kept for a few objects: none for no new object or for more than one bulk (a burst after a kill would wait out a long deadline)', () => {
    const { journal } = fileJournal();
    const addresses = (n: number): string[] => Array.from({ length: n }, (_, i) => `ns/Network/n${i}`);
    expect(earlyJournal(journal, [], 60_000)).toBeUndefined();
    expect(earlyJournal(journal, addresses(8), 60_000)).toBeInstanceOf(EarlyJournal);
    expect(earlyJournal(journal, addresses(9), 60_000)).toBeUndefined();
  });
});
