import type { Informer, KubernetesObject } from '@kubernetes/client-node';

/**
 * client-node's informer lists again by itself after a 410 Gone; any other end
 * of its watch stops it for good, so it is started again after 2 s (unless the
 * owner is stopping) and the end is logged with its reason.
 */
export function rewatchOnError<T extends KubernetesObject>(informer: Informer<T>, what: string, log: (line: string) => void, stopped: () => boolean): void {
  informer.on('error', (err: unknown) => {
    if (stopped()) return;
    log(`watch   ${what} ended (${(err as { message?: string } | undefined)?.message ?? 'no reason'}); listing again in 2 s`);
    setTimeout(() => void informer.start().catch(() => {}), 2_000);
  });
}
