import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { loadSchemaRegistry } from '../schema/registry.ts';
import { commitInfo } from '../source/git-commit-info.ts';
import { gitCacheDir } from '../sync/sync-source.ts';
import type { AgentConfig } from '../config/config.ts';
import type { Logger } from '../telemetry/logger.ts';
import { kubeBackend } from '../view/kube-backend.ts';
import { serveView, type ViewPlace, type ViewServer } from '../view/server.ts';

/**
 * The web view of `kupenstack controller --view-address` (agent/view/). The
 * controller's own client only gives the view the API server's address and
 * CA, and the names of the namespaces that opt in (so a tenant, who may not
 * list namespaces, finds theirs: each name is shown only where the
 * tenant's own access review allows it). Every read is the person's.
 */
export async function startView(
  place: ViewPlace,
  s: { namespaces: string[]; optInLabel: { key: string; value: string }; logger: Logger; config: AgentConfig },
  kc: KubeConfig,
): Promise<ViewServer> {
  const core = kc.makeApiClient(CoreV1Api);
  const hints = async (): Promise<string[]> => {
    const labelled = await core
      .listNamespace({ labelSelector: `${s.optInLabel.key}=${s.optInLabel.value}` })
      .then((l) => l.items.map((n) => n.metadata?.name ?? ''))
      .catch(() => []);
    return [...new Set([...labelled.filter((n) => n !== ''), ...s.namespaces])];
  };
  const view = await serveView({
    ...place,
    backend: kubeBackend(kc, loadSchemaRegistry(), hints, (url, commit) => commitInfo(gitCacheDir(s.config), url, commit)),
    logger: s.logger,
  });
  const { address, port } = view.address;
  s.logger.info({ address, port, tls: place.tls !== undefined }, `serving the web view on ${place.tls ? 'https' : 'http'}://${address}:${port}/`);
  return view;
}
