import type * as k8s from '@kubernetes/client-node';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { CloudSummary, CloudView, HeldPlan, ImagesView, NamespaceSummary, NamespaceView, ObjectDetail, Overview, SyncSummary, SyncTree } from './api.ts';
import { readableNamespaces, serviceAccountNamespace, type NamespaceHints } from './kube-lists.ts';
import { cloudSummaries, cloudView, cloudViews } from './read-clouds.ts';
import { namespaceImages } from './read-images.ts';
import { byNamespace, namespaceObjects, namespaceSummaryOf, namespaceView, objectDetail } from './read-namespace.ts';
import type { KubeObject } from './shape.ts';
import { heldPlan, namespaceSyncSummaries, syncSummaries, syncTree } from './read-syncs.ts';
import type { CommitLookup, ViewReader } from './reader.ts';
import { ViewError } from './view-error.ts';

/**
 * The in-cluster ViewReader: every read through the API server with the
 * client it is made with, the signed-in person's (user-client.ts). What they
 * may not list on the overview is named in `forbidden`, not an error; a page
 * of a namespace they may not read is a 403.
 */
export class KubeViewReader implements ViewReader {
  readonly #kc: k8s.KubeConfig;
  readonly #registry: SchemaRegistry;
  readonly #hints: NamespaceHints;
  readonly #username: string;
  readonly #commits: CommitLookup | undefined;

  constructor(kc: k8s.KubeConfig, registry: SchemaRegistry, hints: NamespaceHints, username: string, commits?: CommitLookup) {
    this.#kc = kc;
    this.#registry = registry;
    this.#hints = hints;
    this.#username = username;
    this.#commits = commits;
  }

  namespaces(): Promise<string[]> {
    return readableNamespaces(this.#kc, this.#registry, this.#hints, serviceAccountNamespace(this.#username));
  }

  async overview(): Promise<Overview> {
    const forbidden: string[] = [];
    const orNone = async <T>(what: string, read: () => Promise<T[]>): Promise<T[]> => {
      try {
        return await read();
      } catch (err) {
        if (err instanceof ViewError && err.status === 403) {
          forbidden.push(what);
          return [];
        }
        throw err;
      }
    };
    const [syncs, tenantSyncs, clouds, namespaces] = await Promise.all([
      orNone<SyncSummary>('syncs', () => syncSummaries(this.#kc, this.#commits)),
      // Tenants' NamespaceSyncs: every namespace's for one who may list them all, else those of the namespaces the person reads.
      namespaceSyncSummaries(this.#kc, () => this.namespaces(), this.#commits),
      orNone<CloudSummary>('clouds', () => cloudSummaries(this.#kc)),
      this.namespaceSummaries(orNone),
    ]);
    return { syncs: [...syncs, ...tenantSyncs], namespaces, clouds, forbidden };
  }

  /** One who may list every kind cluster-wide: one list per kind; else (a tenant) per namespace they may read. */
  private async namespaceSummaries(orNone: <T>(what: string, read: () => Promise<T[]>) => Promise<T[]>): Promise<NamespaceSummary[]> {
    let all: Map<string, KubeObject[]> | undefined;
    try {
      all = await namespaceObjects(this.#kc, this.#registry);
    } catch (err) {
      if (!(err instanceof ViewError && err.status === 403)) throw err;
    }
    if (all) return [...byNamespace(all).entries()].map(([n, kinds]) => namespaceSummaryOf(n, kinds)).sort((a, b) => a.name.localeCompare(b.name));
    const per = await Promise.all(
      (await this.namespaces()).map((n) =>
        orNone<NamespaceSummary>(`namespace ${n}`, async () => [namespaceSummaryOf(n, await namespaceObjects(this.#kc, this.#registry, n))]),
      ),
    );
    return per.flat();
  }

  sync(name: string, namespace?: string): Promise<SyncTree> {
    return syncTree(this.#kc, this.#registry, name, this.#commits, namespace);
  }

  plan(name: string, namespace?: string): Promise<HeldPlan> {
    return heldPlan(this.#kc, name, namespace);
  }

  namespace(namespace: string): Promise<NamespaceView> {
    return namespaceView(this.#kc, this.#registry, namespace);
  }

  object(namespace: string, kind: string, name: string): Promise<ObjectDetail> {
    return objectDetail(this.#kc, this.#registry, namespace, kind, name);
  }

  async images(namespace?: string): Promise<ImagesView> {
    if (namespace) return { images: await namespaceImages(this.#kc, this.#registry, namespace), forbidden: [] };
    const forbidden: string[] = [];
    const rows = await Promise.all(
      (await this.namespaces()).map((n) =>
        namespaceImages(this.#kc, this.#registry, n).catch((err: unknown) => {
          if (err instanceof ViewError && err.status === 403) {
            forbidden.push(`namespace ${n}`);
            return [];
          }
          throw err;
        }),
      ),
    );
    return { images: rows.flat(), forbidden };
  }

  clouds(): Promise<CloudView[]> {
    return cloudViews(this.#kc);
  }

  cloud(name: string): Promise<CloudView> {
    return cloudView(this.#kc, name);
  }
}
