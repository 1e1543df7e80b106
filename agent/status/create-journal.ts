import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-write.ts';

/**
 * Creates sent and not yet answered, kept where a process started after this
 * one was killed (kill -9, OOM, a node lost) finds them. OpenStack goes on with
 * a request whose client died: a bulk of eight ports sent a moment before the
 * kill is made seconds later. A run that started in between would not see them
 * and create them again. With the journal it waits for them (or for the time
 * the killed run would have waited for its answer) before it plans.
 */
export interface CreateJournal {
  /**
   * Record creates of these addresses about to be sent, that may land until `until` (epoch ms). Resolves when
   * the create may leave: once the line is stored (the file journal's append, the controller's ConfigMap write),
   * so a kill -9 after the send always leaves it for the next process.
   */
  begin(addresses: readonly string[], until: number): Promise<string>;
  /** The service answered (made or refused them): nothing of this entry can land any more. */
  end(entry: string): Promise<void>;
  /** Addresses of creates sent by an earlier process or run and never answered that can still land, each with its deadline. */
  landing(): Promise<Map<string, number>>;
  /** These addresses were observed made: nothing of them is landing any more. */
  landed(addresses: readonly string[]): Promise<void>;
}

/** One line of a journal (JSON): begin, end or landed. */
export interface JournalLine {
  /** begin: the entry, its addresses, its deadline. */
  b?: string;
  a?: string[];
  u?: number;
  /** end: the entry. */
  e?: string;
  /** landed: addresses observed made, out of every entry begun before. */
  l?: string[];
}

/** The standalone journal: `<stateDir>/<owner>.creates.jsonl`, one appended line per begin and end. */
export class FileCreateJournal implements CreateJournal {
  readonly file: string;
  #next = 0;
  #ready: Promise<void> | undefined;

  constructor(stateDir: string, owner: string) {
    this.file = join(stateDir, `${owner}.creates.jsonl`);
  }

  async begin(addresses: readonly string[], until: number): Promise<string> {
    const entry = `${process.pid}.${Date.now().toString(36)}.${this.#next++}`;
    // An append is one write(2): once it returned, a kill -9 of this process cannot undo it.
    await this.#append({ b: entry, a: [...addresses], u: until });
    return entry;
  }

  async end(entry: string): Promise<void> {
    await this.#append({ e: entry });
  }

  async landed(addresses: readonly string[]): Promise<void> {
    if (addresses.length > 0) await this.#append({ l: [...addresses] });
  }

  async landing(): Promise<Map<string, number>> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      text = '';
    }
    const { live, landing } = foldJournal(text, Date.now());
    // What is answered or past its deadline is dropped: the file stays as small as what can still land.
    await writeFileAtomic(this.file, live);
    return landing;
  }

  #append(line: JournalLine): Promise<void> {
    this.#ready ??= mkdir(dirname(this.file), { recursive: true }).then(() => undefined);
    return this.#ready.then(() => appendFile(this.file, `${JSON.stringify(line)}\n`));
  }
}

/**
 * A journal's lines, folded: `live` is the text of the begins that can still
 * land (not ended, not all landed, deadline after `now`), one line each, and
 * `landing` their addresses with the latest deadline of each. A line cut by a
 * crash mid-write is skipped: its create was not sent yet (begin resolves
 * after the write).
 */
export function foldJournal(text: string, now: number): { live: string; landing: Map<string, number> } {
  const open = new Map<string, JournalLine>();
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    let line: JournalLine;
    try {
      line = JSON.parse(raw) as JournalLine;
    } catch {
      continue;
    }
    if (line.b) open.set(line.b, line);
    else if (line.e) open.delete(line.e);
    else if (line.l) {
      const gone = new Set(line.l);
      for (const [entry, begun] of open) {
        const left = (begun.a ?? []).filter((a) => !gone.has(a));
        if (left.length === 0) open.delete(entry);
        else open.set(entry, { ...begun, a: left });
      }
    }
  }
  const live = [...open.values()].filter((l) => (l.u ?? 0) > now);
  const landing = new Map<string, number>();
  for (const l of live) for (const a of l.a ?? []) landing.set(a, Math.max(landing.get(a) ?? 0, l.u!));
  return { live: live.map((l) => `${JSON.stringify(l)}\n`).join(''), landing };
}
