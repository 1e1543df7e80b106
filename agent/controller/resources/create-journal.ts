import { randomBytes } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import { isKubeStatus, kubeApiError } from '../../kube/errors.ts';
import { foldJournal, type CreateJournal, type JournalLine } from '../../status/create-journal.ts';

/** The ConfigMap key holding the journal's lines. */
export const journalKey = 'creates.jsonl';
/** Writes that met another writer's change (a shard holder of the same controller) are read and made again this often. */
const conflictRetries = 8;

interface Pending {
  /** Undefined: only waits for the lines queued before it (flushed). */
  line: JournalLine | undefined;
  done: () => void;
  fail: (err: unknown) => void;
}

/**
 * The controller's create journal (status/create-journal.ts): a ConfigMap in
 * the controller's own namespace, so whoever acts after a kill -9 (this pod's
 * restarted container, or the replica that takes the Lease) finds the creates
 * the dead process sent and waits for them instead of creating them again.
 * As in the file journal, a line is stored before its create is sent (see begin).
 *
 * Writes are group-committed: every line queued while one write is in flight
 * goes into the next, so one write serves all the creates that start together
 * whatever the engine's concurrency. Each write folds what is there
 * (ended, landed and expired entries dropped): the ConfigMap holds only what can
 * still land. Shard holders share it; a write that meets another's change
 * (409) reads it again and is made again.
 */
export class ConfigMapCreateJournal implements CreateJournal {
  readonly namespace: string;
  readonly name: string;
  readonly #core: k8s.CoreV1Api;
  /** Entry ids unique across replicas and restarts (a pid is 1 in every container). */
  readonly #writer = randomBytes(4).toString('hex');
  #next = 0;
  #pending: Pending[] = [];
  #flushing = false;
  /** The ConfigMap as this process last read or wrote it (absent: read it first). */
  #known: { text: string; resourceVersion: string | undefined } | undefined;
  #stale = false;
  /** Told of a write that failed where nobody awaits it (end): a journal that cannot be written must not go unnoticed. */
  readonly #onError: (err: Error) => void;

  constructor(core: k8s.CoreV1Api, namespace: string, name: string, onError: (err: Error) => void = () => undefined) {
    this.#core = core;
    this.namespace = namespace;
    this.name = name;
    this.#onError = onError;
  }

  /**
   * Resolves once the line is stored in the ConfigMap: only then may the
   * create leave (audit W14). Sent before its line, a create killed in the
   * round trip left nothing for the next process, which made it a second
   * time when Neutron finished the first. The price is the other window: a
   * kill after the write and before the send leaves an entry for a create
   * that never reached OpenStack, and the next run waits out its deadline for
   * it; a wait is recoverable, a duplicate is not. Group commit keeps it to
   * one write for every create that starts together. A write that fails
   * rejects: the create is not sent unrecorded.
   */
  async begin(addresses: readonly string[], until: number): Promise<string> {
    const entry = `${this.#writer}.${(this.#next++).toString(36)}`;
    await this.#write({ b: entry, a: [...addresses], u: until });
    return entry;
  }

  /** Resolves when every line queued so far has been written (or failed). */
  async flushed(): Promise<void> {
    if (!this.#flushing && this.#pending.length === 0) return;
    await this.#write(undefined).catch(() => undefined);
  }

  /**
   * Queued, not awaited: a lost end costs little (a later run looks
   * for objects that are there, observed at once, or waits for a refused create
   * until its deadline).
   */
  end(entry: string): Promise<void> {
    this.#write({ e: entry }).catch(this.#onError);
    return Promise.resolve();
  }

  async landed(addresses: readonly string[]): Promise<void> {
    if (addresses.length > 0) await this.#write({ l: [...addresses] });
  }

  /**
   * Read from the API server the first time (what a dead process left) and
   * after refresh(); else what this process knows, which its own writes keep
   * current: a resync of every namespace costs no GET.
   */
  async landing(): Promise<Map<string, number>> {
    if (!this.#known || this.#stale) {
      this.#known = await this.#read();
      this.#stale = false;
    }
    return foldJournal(this.#known.text, Date.now()).landing;
  }

  /** Another process may have written since (this replica just took a Lease over): the next landing() reads again. */
  refresh(): void {
    this.#stale = true;
  }

  #write(line: JournalLine | undefined): Promise<void> {
    return new Promise<void>((done, fail) => {
      this.#pending.push({ line, done, fail });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0);
        try {
          const lines = batch.flatMap((p) => (p.line ? [p.line] : []));
          if (lines.length > 0) await this.#commit(lines);
          for (const p of batch) p.done();
        } catch (err) {
          for (const p of batch) p.fail(err);
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  async #commit(lines: readonly JournalLine[]): Promise<void> {
    const added = lines.map((l) => `${JSON.stringify(l)}\n`).join('');
    for (let attempt = 0; ; attempt++) {
      const known = this.#known ?? (await this.#read());
      const text = foldJournal(known.text + added, Date.now()).live;
      const body: k8s.V1ConfigMap = {
        metadata: {
          name: this.name,
          namespace: this.namespace,
          labels: { 'app.kubernetes.io/managed-by': 'kupenstack' },
          ...(known.resourceVersion ? { resourceVersion: known.resourceVersion } : {}),
        },
        data: { [journalKey]: text },
      };
      try {
        const res = known.resourceVersion
          ? await this.#core.replaceNamespacedConfigMap({ name: this.name, namespace: this.namespace, body })
          : await this.#core.createNamespacedConfigMap({ namespace: this.namespace, body });
        this.#known = { text, resourceVersion: res.metadata?.resourceVersion };
        return;
      } catch (err) {
        this.#known = undefined;
        // 409: changed (or created) by another writer since it was read: read it again, fold our lines into theirs.
        if (isKubeStatus(err, 409) && attempt < conflictRetries) continue;
        throw kubeApiError(`record creates in flight in the create journal ConfigMap ${this.namespace}/${this.name}`, err);
      }
    }
  }

  async #read(): Promise<{ text: string; resourceVersion: string | undefined }> {
    try {
      const cm = await this.#core.readNamespacedConfigMap({ name: this.name, namespace: this.namespace });
      return { text: cm.data?.[journalKey] ?? '', resourceVersion: cm.metadata?.resourceVersion };
    } catch (err) {
      if (isKubeStatus(err, 404)) return { text: '', resourceVersion: undefined };
      throw kubeApiError(`read the create journal ConfigMap ${this.namespace}/${this.name}`, err);
    }
  }
}

/** The journal's ConfigMap, beside the Lease (`--leader-election-id`) in the controller's namespace. */
export const createJournalName = (leaderElectionId: string): string => `${leaderElectionId}-creates`;
