import { ApiException, type CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ConfigMapCreateJournal, journalKey } from '../../../agent/controller/resources/create-journal.ts';

/**
 * An in-memory ConfigMap store with the API server's compare-and-swap on
 * resourceVersion (a replace with an old version is 409), so two journals
 * play two processes (a killed one and the one that acts next). The real API
 * server is in test/integration/controller/create-journal.test.ts.
 */
class ConfigMaps {
  readonly maps = new Map<string, V1ConfigMap>();
  private version = 0;
  writes = 0;
  /** Writes wait for this (an API server slower than the create beside it). */
  gate: Promise<unknown> = Promise.resolve();
  /** Writes are refused with this status (RBAC lost, a bad name). */
  refuse: number | undefined;

  api(): CoreV1Api {
    const key = (ns: string, name: string): string => `${ns}/${name}`;
    const api = {
      readNamespacedConfigMap: ({ name, namespace }: { name: string; namespace: string }): Promise<V1ConfigMap> => {
        const cm = this.maps.get(key(namespace, name));
        return cm ? Promise.resolve(structuredClone(cm)) : Promise.reject(new ApiException(404, 'not found', {}, {}));
      },
      createNamespacedConfigMap: async ({ namespace, body }: { namespace: string; body: V1ConfigMap }): Promise<V1ConfigMap> => {
        await this.gate;
        if (this.refuse !== undefined) throw new ApiException(this.refuse, 'refused', {}, {});
        const k = key(namespace, body.metadata!.name!);
        if (this.maps.has(k)) throw new ApiException(409, 'exists', {}, {});
        this.writes++;
        this.maps.set(k, { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
        return structuredClone(this.maps.get(k)!);
      },
      replaceNamespacedConfigMap: async ({ name, namespace, body }: { name: string; namespace: string; body: V1ConfigMap }): Promise<V1ConfigMap> => {
        await this.gate;
        if (this.refuse !== undefined) throw new ApiException(this.refuse, 'refused', {}, {});
        const k = key(namespace, name);
        if (this.maps.get(k)?.metadata?.resourceVersion !== body.metadata?.resourceVersion) throw new ApiException(409, 'conflict', {}, {});
        this.writes++;
        this.maps.set(k, { ...structuredClone(body), metadata: { ...body.metadata, resourceVersion: String(++this.version) } });
        return structuredClone(this.maps.get(k)!);
      },
    };
    return api as unknown as CoreV1Api;
  }
}

describe('the controller\'s ConfigMap create journal (audit M5)', () => {
  it('begin writes the entry to the ConfigMap, and the process that acts next finds it landing', async () => {
    const store = new ConfigMaps();
    const dead = new ConfigMapCreateJournal(store.api(), 'kupenstack-system', 'ks-creates');
    const until = Date.now() + 60_000;
    await dead.begin(['team-a/Network/n1', 'team-a/Network/n2'], until);
    await dead.flushed();
    const text = store.maps.get('kupenstack-system/ks-creates')?.data?.[journalKey] ?? '';
    expect(text.trim().split('\n').map((l) => JSON.parse(l) as { a?: string[]; u?: number })).toEqual([expect.objectContaining({ a: ['team-a/Network/n1', 'team-a/Network/n2'], u: until })]);
    // The dead process never ends its entry; the next one reads the ConfigMap, not its own memory.
    const next = new ConfigMapCreateJournal(store.api(), 'kupenstack-system', 'ks-creates');
    expect(await next.landing()).toEqual(new Map([['team-a/Network/n1', until], ['team-a/Network/n2', until]]));
  });

  it('an ended entry, or one observed landed, is nothing to wait for', async () => {
    const store = new ConfigMaps();
    const j = new ConfigMapCreateJournal(store.api(), 'ns', 'j');
    const e1 = await j.begin(['a/Network/x'], Date.now() + 60_000);
    await j.begin(['a/Network/y'], Date.now() + 60_000);
    await j.end(e1);
    await j.landed(['a/Network/y']);
    await j.flushed();
    expect(await new ConfigMapCreateJournal(store.api(), 'ns', 'j').landing()).toEqual(new Map());
  });

  it('two writers (shard holders) sharing the ConfigMap keep both their lines through a conflict', async () => {
    const store = new ConfigMaps();
    const a = new ConfigMapCreateJournal(store.api(), 'ns', 'j');
    const b = new ConfigMapCreateJournal(store.api(), 'ns', 'j');
    // Both read the (missing) ConfigMap before either wrote: the second create meets a 409 and is made again over the first.
    await Promise.all([a.landing(), b.landing()]);
    const until = Date.now() + 60_000;
    await Promise.all([a.begin(['s1/Network/a'], until), b.begin(['s2/Network/b'], until)]);
    await Promise.all([a.flushed(), b.flushed()]);
    expect([...(await new ConfigMapCreateJournal(store.api(), 'ns', 'j').landing()).keys()].sort()).toEqual(['s1/Network/a', 's2/Network/b']);
    expect(store.writes).toBe(2);
  });

  it('begin resolves only once its line is stored: the create never leaves before it (audit W14)', async () => {
    const store = new ConfigMaps();
    let release = (): void => undefined;
    store.gate = new Promise<void>((r) => (release = r));
    const j = new ConfigMapCreateJournal(store.api(), 'ns', 'j');
    let begun = false;
    const entry = j.begin(['a/Network/x'], Date.now() + 60_000).then((e) => {
      begun = true;
      return e;
    });
    // The API server has not stored it yet: the caller (journaled, before the POST) is still waiting.
    await new Promise((r) => setTimeout(r, 20));
    expect(begun).toBe(false);
    expect(store.maps.size).toBe(0);
    release();
    await entry;
    expect(store.maps.get('ns/j')?.data?.[journalKey]).toContain('a/Network/x');
  });

  it('a begin whose line cannot be stored rejects, naming the ConfigMap: no create is sent unrecorded', async () => {
    const store = new ConfigMaps();
    store.refuse = 403;
    const j = new ConfigMapCreateJournal(store.api(), 'kupenstack-system', 'ks-creates');
    await expect(j.begin(['a/Network/x'], Date.now() + 60_000)).rejects.toThrow(/create journal ConfigMap kupenstack-system\/ks-creates/);
  });
});
