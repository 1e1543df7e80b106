import { existsSync } from 'node:fs';
import { KubeConfig, PatchStrategy, setHeaderOptions, type ConfigurationOptions, type ObservableMiddleware } from '@kubernetes/client-node';
import { KubeConfigError } from './errors.ts';
import { poolConnections } from './pooled-connections.ts';

export interface KubeConfigOptions {
  /** A kubeconfig file; wins over everything else. */
  kubeconfig?: string;
  /** Context inside the kubeconfig; default its current-context. */
  context?: string;
  /** The environment to read KUBECONFIG and KUBERNETES_SERVICE_HOST/PORT from (tests). */
  env?: NodeJS.ProcessEnv;
  /** Prefix of /var/run/secrets/kubernetes.io/serviceaccount (tests run "in-cluster" from a temp dir). */
  inClusterPathPrefix?: string;
  /** Allow a cluster entry with insecure-skip-tls-verify. Off: TLS is verified unless the user says otherwise, twice. */
  allowInsecure?: boolean;
}

const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The Kubernetes configuration, in the order kubectl users expect: an explicit
 * kubeconfig file, then $KUBECONFIG, then the in-cluster service account
 * (KUBERNETES_SERVICE_HOST and the mounted token). Never ~/.kube/config
 * silently: an agent must not act on whatever cluster a developer last used.
 */
export function loadKubeConfig(opts: KubeConfigOptions = {}): KubeConfig {
  const env = opts.env ?? process.env;
  const kc = new KubeConfig();
  const file = opts.kubeconfig ?? env.KUBECONFIG?.split(':').find((f) => f !== '');
  let source: string;
  if (file) {
    if (!existsSync(file)) {
      throw new KubeConfigError(
        `kubeconfig ${file} does not exist${opts.kubeconfig ? '' : ' (named by $KUBECONFIG)'}: give the path of a readable kubeconfig file`,
      );
    }
    try {
      kc.loadFromFile(file);
    } catch (cause) {
      throw new KubeConfigError(`kubeconfig ${file} cannot be read: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
    if (opts.context) {
      if (!kc.getContextObject(opts.context)) {
        throw new KubeConfigError(
          `kubeconfig ${file} has no context "${opts.context}"; it has: ${
            kc
              .getContexts()
              .map((c) => c.name)
              .join(', ') || 'none'
          }`,
        );
      }
      kc.setCurrentContext(opts.context);
    }
    source = `kubeconfig ${file}`;
  } else if (env.KUBERNETES_SERVICE_HOST) {
    const prefix = opts.inClusterPathPrefix ?? '';
    if (!existsSync(`${prefix}${serviceAccountDir}/token`)) {
      throw new KubeConfigError(
        `KUBERNETES_SERVICE_HOST is set but there is no service-account token at ${prefix}${serviceAccountDir}/token: mount one (automountServiceAccountToken) or pass a kubeconfig`,
      );
    }
    // loadFromCluster reads process.env; the caller's env may differ in tests.
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = env.KUBERNETES_SERVICE_HOST;
    process.env.KUBERNETES_SERVICE_PORT = env.KUBERNETES_SERVICE_PORT ?? '443';
    try {
      kc.loadFromCluster(prefix);
    } finally {
      restoreEnv('KUBERNETES_SERVICE_HOST', saved.host);
      restoreEnv('KUBERNETES_SERVICE_PORT', saved.port);
    }
    source = 'the in-cluster service account';
  } else {
    throw new KubeConfigError('no Kubernetes configuration: pass --kubeconfig <file>, set KUBECONFIG, or run in a pod with a service account');
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeConfigError(`${source} names no cluster for its current context "${kc.getCurrentContext()}"`);
  if (cluster.skipTLSVerify && !opts.allowInsecure) {
    throw new KubeConfigError(
      `${source}: cluster "${cluster.name}" sets insecure-skip-tls-verify; give its certificate-authority instead (or allow insecure connections explicitly)`,
    );
  }
  return poolConnections(kc);
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

/**
 * Options for the generated patch methods that make them a server-side apply.
 * client-node 2.x sends the first media type listed (json-patch) otherwise,
 * and the API server answers 400 "cannot unmarshal object into []jsonPatchOp".
 * Pass as the second argument, with `fieldManager` (and `force`) in the first.
 */
export const serverSideApply: ConfigurationOptions<ObservableMiddleware> = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** Same, as a JSON merge patch (for metadata such as finalizers, where SSA ownership is not wanted). */
export const mergePatch: ConfigurationOptions<ObservableMiddleware> = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
