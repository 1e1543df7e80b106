import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Command } from 'commander';
import { loadKubeConfig } from '../kube/client.ts';

export interface KubeFlags {
  kubeconfig?: string;
  context?: string;
}

/** kubectl's flags for the commands a person runs against a cluster (`get`, `reconcile`). */
export function addKubeOptions(cmd: Command): Command {
  return cmd
    .option('--kubeconfig <file>', 'kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)')
    .option('--context <name>', 'kubeconfig context to use (default: its current-context)');
}

/**
 * The cluster as kubectl finds it. Unlike the agent and controller (which
 * never fall back to ~/.kube/config: a daemon must not act on whatever
 * cluster a developer last used), a person's command does what kubectl does.
 */
export function kubeConfigFor(flags: KubeFlags, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  const fallback = !flags.kubeconfig && !env.KUBECONFIG && !env.KUBERNETES_SERVICE_HOST && existsSync(home) ? home : undefined;
  const kubeconfig = flags.kubeconfig ?? fallback;
  return loadKubeConfig({ ...(kubeconfig ? { kubeconfig } : {}), ...(flags.context ? { context: flags.context } : {}), env });
}

export interface NamespaceFlags {
  namespace?: string;
  allNamespaces?: boolean;
}

/** kubectl's `-n` and `-A`, for the commands that read namespaced objects. */
export function addNamespaceOptions(cmd: Command): Command {
  return cmd
    .option('-n, --namespace <name>', "the namespace (default: the context's namespace, else default)")
    .option('-A, --all-namespaces', 'every namespace');
}

/** The namespace a command reads, as kubectl picks it: -A for all (undefined), -n, the context's namespace, else `default`. */
export function namespaceOf(flags: NamespaceFlags, kc: KubeConfig): string | undefined {
  if (flags.allNamespaces) return undefined;
  if (flags.namespace) return flags.namespace;
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}
