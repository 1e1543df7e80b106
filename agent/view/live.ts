import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as k8s from '@kubernetes/client-node';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { ChangeEvent, DeniedEvent } from './api.ts';
import { ViewError, viewErrorOf } from './view-error.ts';
import { watchTarget, type WatchTarget } from './watches.ts';

/** What a page's scope watches (api.ts, /api/events): the objects it shows and their Events. */
export function targetsOf(scope: string, registry: SchemaRegistry, namespaces: string[] | undefined): WatchTarget[] {
  const kinds = [...registry.kinds.values()].filter((k) => k.scope === 'Namespaced');
  const everywhere = (t: Omit<WatchTarget, 'namespace'>): WatchTarget[] => (namespaces ? namespaces.map((namespace) => ({ ...t, namespace })) : [t]);
  const [what, name] = scope.split(':', 2) as [string, string | undefined];
  const byName = name ? `metadata.name=${name}` : undefined;
  switch (what) {
    case 'overview':
      return [
        { plural: 'syncs', kind: 'Sync' },
        ...everywhere({ plural: 'namespacesyncs', kind: 'NamespaceSync' }),
        { plural: 'openstackclouds', kind: 'OpenStackCloud' },
        ...kinds.flatMap((k) => everywhere({ plural: k.plural, kind: k.kind })),
      ];
    case 'sync':
      if (!name) break;
      return [
        { plural: 'syncs', kind: 'Sync', fieldSelector: byName! },
        { plural: 'events', kind: 'Event', namespace: 'default', fieldSelector: `involvedObject.kind=Sync,involvedObject.name=${name}` },
        ...kinds.flatMap((k) => everywhere({ plural: k.plural, kind: k.kind, labelSelector: `kupenstack.io/sync=${name}` })),
      ];
    case 'nssync': {
      // A tenant's NamespaceSync, `nssync:<namespace>/<name>`: it, its Events and what it applied, all in its namespace.
      const [ns, sync] = (name ?? '').split('/', 2);
      if (!ns || !sync) break;
      return [
        { plural: 'namespacesyncs', kind: 'NamespaceSync', namespace: ns, fieldSelector: `metadata.name=${sync}` },
        { plural: 'events', kind: 'Event', namespace: ns, fieldSelector: `involvedObject.kind=NamespaceSync,involvedObject.name=${sync}` },
        ...kinds.map((k) => ({ plural: k.plural, kind: k.kind, namespace: ns, labelSelector: `kupenstack.io/sync=${sync}` })),
      ];
    }
    case 'namespace':
      if (!name) break;
      return [...kinds.map((k) => ({ plural: k.plural, kind: k.kind, namespace: name })), { plural: 'events', kind: 'Event', namespace: name }];
    case 'images':
      return everywhere({ plural: registry.kinds.get('Image')?.plural ?? 'images', kind: 'Image' });
    case 'cloud':
      if (!name) break;
      return [
        { plural: 'openstackclouds', kind: 'OpenStackCloud', fieldSelector: byName! },
        { plural: 'events', kind: 'Event', namespace: 'default', fieldSelector: `involvedObject.kind=OpenStackCloud,involvedObject.name=${name}` },
      ];
  }
  throw new ViewError(400, `scope ${scope}: expected overview, sync:<name>, nssync:<namespace>/<name>, namespace:<ns>, images or cloud:<name>`);
}

/** Whether the scope's targets are cluster-wide lists a tenant cannot make: then they are watched per readable namespace. */
export function needsNamespaces(scope: string): boolean {
  return scope === 'overview' || scope === 'images' || scope.startsWith('sync:');
}

/**
 * `GET /api/events?scope=…`: one server-sent-events stream fed by watches
 * made with the person's client. Changes are sent at most every 200 ms, one
 * line per changed object (a burst of status writes is one read for the
 * page); a comment every 25 s keeps proxies from closing the stream. A
 * scope the person may not watch is one `denied` event, then the end. Cluster-scoped
 * lists a tenant may not make (Syncs, clouds on the overview) are skipped quietly.
 */
export async function serveEvents(
  req: IncomingMessage,
  res: ServerResponse,
  kc: k8s.KubeConfig,
  registry: SchemaRegistry,
  scopes: string[],
  namespaces: () => Promise<string[]>,
): Promise<void> {
  const abort = new AbortController();
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.write(': kupenstack view\n\n');
  const pending = new Map<string, ChangeEvent>();
  const flush = setInterval(() => {
    for (const e of pending.values()) res.write(`event: change\ndata: ${JSON.stringify(e)}\n\n`);
    pending.clear();
  }, 200);
  const ping = setInterval(() => res.write(': ping\n\n'), 25_000);
  const end = (): void => {
    abort.abort();
    clearInterval(flush);
    clearInterval(ping);
  };
  req.on('close', end);
  const change = (e: ChangeEvent): void => void pending.set(`${e.scope}/${e.kind}/${e.namespace ?? ''}/${e.name}`, e);
  for (const scope of scopes) {
    try {
      const plain = targetsOf(scope, registry, undefined);
      const started = await Promise.allSettled(plain.map((t) => watchTarget(kc, t, scope, change, abort.signal)));
      const refused = plain.flatMap((t, i) => {
        const r = started[i]!;
        return r.status === 'rejected' ? [{ target: t, error: r.reason as unknown }] : [];
      });
      await watchRefused(kc, registry, scope, refused, namespaces, change, abort.signal);
    } catch (err) {
      const error = viewErrorOf(`watch ${scope}`, err);
      const denied: DeniedEvent = { scope, error: error.body() };
      res.write(`event: denied\ndata: ${JSON.stringify(denied)}\n\n`);
      end();
      res.end();
      return;
    }
  }
  res.write('event: ready\ndata: {}\n\n');
}

const isForbidden = (err: unknown): boolean => err instanceof ViewError && err.status === 403;

/**
 * The targets whose watch was refused: Events the person may not read
 * (kupenstack-view grants KupenStack's kinds only) are left out, the objects'
 * own changes still come; on a page that lists across namespaces a
 * cluster-wide watch is made again in each namespace the person may read
 * (Syncs and clouds a tenant may not see are left out); on a one-namespace
 * or one-object page a refusal is the page's 403.
 */
async function watchRefused(
  kc: k8s.KubeConfig,
  registry: SchemaRegistry,
  scope: string,
  refusals: { target: WatchTarget; error: unknown }[],
  namespaces: () => Promise<string[]>,
  change: (e: ChangeEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const refused = refusals.filter((r) => !(r.target.plural === 'events' && isForbidden(r.error)));
  if (refused.length === 0) return;
  const other = refused.find((r) => !isForbidden(r.error));
  if (other) throw other.error;
  if (!needsNamespaces(scope)) throw refused[0]!.error;
  const names = await namespaces();
  const perNamespace = targetsOf(scope, registry, names).filter((t) => t.namespace && refused.some((r) => r.target.plural === t.plural && !r.target.namespace));
  const results = await Promise.allSettled(perNamespace.map((t) => watchTarget(kc, t, scope, change, signal)));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected' && !isForbidden(r.reason));
  if (failed) throw failed.reason;
}
