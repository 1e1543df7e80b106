import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { mergePatch, serverSideApply } from '../kube/client.ts';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import type { OpenStackCloudStatus } from '../model/kinds.generated.ts';
import { generateSecrets, type CloudSecrets } from './secrets.ts';

/**
 * What the agent keeps about a cloud in the cloud's own namespace, so that a restarted (or
 * killed) agent continues where it was: the generated credentials (a Secret: a render with
 * the same secrets is identical), the inventory of the objects it applied (a ConfigMap: the
 * prune list — never Helm release Secrets) and, for a standalone run, the cloud's status (the
 * same ConfigMap; the controller keeps it on the CR instead: status-home.ts).
 */
export interface InventoryEntry {
  apiVersion: string;
  kind: string;
  name: string;
}

/** What the ConfigMap holds: the inventory, and the status (`{}` when it keeps none). */
export interface CloudState {
  inventory: InventoryEntry[];
  status: OpenStackCloudStatus;
}

export const entryKey = (e: InventoryEntry): string => `${e.apiVersion}/${e.kind}/${e.name}`;

const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'kupenstack' };

export class CloudStore {
  private readonly core: CoreV1Api;
  readonly namespace: string;
  readonly cloud: string;

  constructor(kubeConfig: KubeConfig, namespace: string, cloud: string) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.namespace = namespace;
    this.cloud = cloud;
  }

  private get secretName(): string {
    return `kupenstack-cloud-${this.cloud}-secrets`;
  }

  /** The clouds.yaml of the cloud's admin (admin-clouds.ts): what the resource loop reads with --clouds-secret. */
  get cloudsSecretName(): string {
    return `kupenstack-cloud-${this.cloud}-clouds-yaml`;
  }

  get stateName(): string {
    return `kupenstack-cloud-${this.cloud}-state`;
  }

  /** The cloud's namespace exists (created when absent; never deleted by the agent). */
  async ensureNamespace(): Promise<void> {
    try {
      await this.core.readNamespace({ name: this.namespace });
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw kubeApiError(`read namespace ${this.namespace}`, err);
      await this.core.createNamespace({ body: { metadata: { name: this.namespace, labels: MANAGED_BY } } }).catch((e: unknown) => {
        if (!isKubeStatus(e, 409)) throw kubeApiError(`create namespace ${this.namespace}`, e);
      });
    }
  }

  /** The stored credentials, undefined before the first install (a plan does not create them). */
  async readSecrets(): Promise<CloudSecrets | undefined> {
    try {
      const s = await this.core.readNamespacedSecret({ name: this.secretName, namespace: this.namespace });
      return JSON.parse(Buffer.from(s.data?.['secrets.json'] ?? '', 'base64').toString('utf8')) as CloudSecrets;
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw kubeApiError(`read Secret ${this.namespace}/${this.secretName}`, err);
    }
  }

  /** The cloud's credentials: read, or generated once and stored (never logged). */
  async secrets(): Promise<CloudSecrets> {
    const known = await this.readSecrets();
    if (known) return known;
    const fresh = generateSecrets();
    try {
      await this.core.createNamespacedSecret({
        namespace: this.namespace,
        body: {
          metadata: { name: this.secretName, labels: { ...MANAGED_BY, 'kupenstack.io/cloud': this.cloud } },
          type: 'Opaque',
          data: { 'secrets.json': Buffer.from(JSON.stringify(fresh)).toString('base64') },
        },
      });
      return fresh;
    } catch (err) {
      // Another agent created it first: use theirs.
      if (isKubeStatus(err, 409)) return this.secrets();
      throw kubeApiError(`create Secret ${this.namespace}/${this.secretName}`, err);
    }
  }

  /**
   * Writes the admin's clouds.yaml (server-side apply: the same text twice is no change, and a
   * second agent writing it too is harmless). The text holds a password: it goes nowhere else.
   */
  async writeCloudsYaml(text: string): Promise<{ namespace: string; name: string; key: string }> {
    const name = this.cloudsSecretName;
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: this.namespace, labels: { ...MANAGED_BY, 'kupenstack.io/cloud': this.cloud } },
      type: 'Opaque',
      data: { 'clouds.yaml': Buffer.from(text).toString('base64') },
    };
    try {
      await this.core.patchNamespacedSecret({ name, namespace: this.namespace, body, fieldManager: 'kupenstack', force: true }, serverSideApply);
    } catch (err) {
      throw kubeApiError(`apply Secret ${this.namespace}/${name}`, err);
    }
    return { namespace: this.namespace, name, key: 'clouds.yaml' };
  }

  async load(): Promise<CloudState> {
    try {
      const cm = await this.core.readNamespacedConfigMap({ name: this.stateName, namespace: this.namespace });
      return {
        inventory: JSON.parse(cm.data?.['inventory.json'] ?? '[]') as InventoryEntry[],
        status: JSON.parse(cm.data?.['status.json'] ?? '{}') as OpenStackCloudStatus,
      };
    } catch (err) {
      if (isKubeStatus(err, 404)) return { inventory: [], status: {} };
      throw kubeApiError(`read ConfigMap ${this.namespace}/${this.stateName}`, err);
    }
  }

  /**
   * Writes the parts given, each its own key of the ConfigMap (a merge patch: the other key is
   * left as it is); a `null` status removes the key. Creates the ConfigMap the first time.
   */
  async save(part: { inventory?: InventoryEntry[]; status?: OpenStackCloudStatus | null }): Promise<void> {
    const data: Record<string, string | null> = {};
    if (part.inventory) {
      const inventory = [...new Map(part.inventory.map((e) => [entryKey(e), e])).values()].sort((a, b) => entryKey(a).localeCompare(entryKey(b)));
      data['inventory.json'] = JSON.stringify(inventory);
    }
    if (part.status !== undefined) data['status.json'] = part.status === null ? null : JSON.stringify(part.status);
    const metadata = { name: this.stateName, namespace: this.namespace, labels: { ...MANAGED_BY, 'kupenstack.io/cloud': this.cloud } };
    try {
      await this.core.patchNamespacedConfigMap({ name: this.stateName, namespace: this.namespace, body: { metadata, data } }, mergePatch);
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw kubeApiError(`write ConfigMap ${this.namespace}/${this.stateName}`, err);
      const kept = Object.fromEntries(Object.entries(data).filter((e): e is [string, string] => e[1] !== null));
      await this.core.createNamespacedConfigMap({ namespace: this.namespace, body: { metadata, data: kept } }).catch((e: unknown) => {
        throw kubeApiError(`create ConfigMap ${this.namespace}/${this.stateName}`, e);
      });
    }
  }
}
