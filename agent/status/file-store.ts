import { join } from 'node:path';
import { writeJsonAtomic } from '../util/atomic-write.ts';
import { readState, type State } from './state.ts';
import type { ResourceStatus, RunSummary, StateStore, StoredState } from './store.ts';

/**
 * The standalone StateStore: one JSON file per owner in the state folder
 * (`<stateDir>/<owner>.json`, today's format). Resource writes are kept in
 * memory and the file is written once per run, atomically.
 */
export class FileStateStore implements StateStore {
  readonly file: string;
  readonly #owner: string;
  #state: State | undefined;

  constructor(stateDir: string, owner: string) {
    this.file = join(stateDir, `${owner}.json`);
    this.#owner = owner;
  }

  async load(): Promise<StoredState> {
    this.#state = await readState(this.file, this.#owner);
    return structuredClone(this.#state);
  }

  async putResource(address: string, state: ResourceStatus | undefined): Promise<void> {
    const s = (this.#state ??= await readState(this.file, this.#owner));
    if (state === undefined) delete s.resources[address];
    else s.resources[address] = structuredClone(state);
  }

  async finishRun(run: RunSummary): Promise<void> {
    const s = (this.#state ??= await readState(this.file, this.#owner));
    s.lastAttemptedRevision = run.revision;
    if (run.result !== 'failed') s.lastAppliedRevision = run.revision;
    s.history = [...s.history, { revision: run.revision, startedAt: run.startedAt, durationMs: run.durationMs, result: run.result, counts: run.counts }].slice(
      -10,
    );
    await writeJsonAtomic(this.file, s);
  }
}
