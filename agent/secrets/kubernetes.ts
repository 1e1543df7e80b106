import * as k8s from '@kubernetes/client-node';
import { KupenstackError } from '../errors.ts';
import { KubeSecretWriter } from './kube-writer.ts';
import { describeSecret, type SecretKey, type SecretName, type SecretResolver } from './resolver.ts';

/** A Secret or key that does not exist; the message names the reference, never a value. */
export class KubeSecretNotFoundError extends KupenstackError {
  constructor(ref: SecretKey, why: string) {
    super(
      'secret.not-found',
      `${describeSecret(ref)} ${why}; create it (kubectl create secret generic … -n ${ref.namespace ?? '<namespace>'}) or fix the reference`,
    );
  }
}

type SecretInformer = k8s.Informer<k8s.V1Secret> & k8s.ObjectCache<k8s.V1Secret>;

/**
 * SecretResolver over Kubernetes Secrets. Each namespace's Secrets are kept
 * by one list+watch (started on first use), so a rotated Secret is seen on
 * the next read without a restart and without a GET per use. Only the
 * namespaces the controller reconciles are watched; values stay in memory
 * and are never logged.
 */
export class KubeSecretResolver implements SecretResolver {
  private readonly kc: k8s.KubeConfig;
  private readonly core: k8s.CoreV1Api;
  private readonly informers = new Map<string, Promise<SecretInformer>>();
  /** For cluster-scoped references (the cloud's clouds.yaml): the controller's own namespace. */
  private readonly defaultNamespace: string;
  /** Secrets KupenStack makes (an ApplicationCredential's), in the manifest's namespace. */
  readonly writer: KubeSecretWriter;

  constructor(kc: k8s.KubeConfig, defaultNamespace: string) {
    this.kc = kc;
    this.writer = new KubeSecretWriter(kc);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.defaultNamespace = defaultNamespace;
  }

  async get(ref: SecretKey): Promise<string> {
    const all = await this.getAll(ref);
    const key = ref.key ?? '';
    const value = all[key];
    if (value === undefined) throw new KubeSecretNotFoundError(ref, `has no key "${key}"`);
    return value;
  }

  async getAll(ref: SecretName): Promise<Record<string, string>> {
    if (!ref.name) throw new KubeSecretNotFoundError(ref, 'is not named (set name)');
    const namespace = ref.namespace ?? this.defaultNamespace;
    const informer = await this.informerFor(namespace);
    const secret = informer.get(ref.name, namespace);
    if (!secret) throw new KubeSecretNotFoundError({ ...ref, namespace }, 'does not exist');
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
    for (const [k, v] of Object.entries(secret.stringData ?? {})) out[k] = v;
    return out;
  }

  stop(): void {
    for (const p of this.informers.values()) void p.then((i) => i.stop());
    this.informers.clear();
  }

  private informerFor(namespace: string): Promise<SecretInformer> {
    let p = this.informers.get(namespace);
    if (!p) {
      p = (async () => {
        const informer = k8s.makeInformer(this.kc, `/api/v1/namespaces/${namespace}/secrets`, () => this.core.listNamespacedSecret({ namespace }));
        // A watch that ends with an error (not a 410, which the informer handles by listing again) is restarted.
        informer.on('error', () => setTimeout(() => void informer.start().catch(() => {}), 2_000));
        await informer.start();
        return informer;
      })();
      p.catch(() => this.informers.delete(namespace));
      this.informers.set(namespace, p);
    }
    return p;
  }
}
