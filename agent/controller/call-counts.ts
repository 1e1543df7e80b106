import type * as k8s from '@kubernetes/client-node';
import { ApiCounters, callKind } from '../openstack/counters.ts';

/** What a clocked call was doing when its listener was told: a write leaving, a write or read answered, a token answered. */
export type ClockedCall = 'write sent' | 'write answered' | 'read answered' | 'token answered';

/** OpenStack call counters that also tell a listener when a call left or was answered (the controller's `timing` line). */
export class ClockedCounters extends ApiCounters {
  readonly onCall = new Set<(call: ClockedCall, at: number) => void>();

  override sending(service: string, method: string): void {
    super.sending(service, method);
    if (callKind(method) === 'write') this.#tell('write sent');
  }

  override record(service: string, method: string, status: number): void {
    super.record(service, method, status);
    this.#tell(`${callKind(method)} answered`);
  }

  #tell(call: ClockedCall): void {
    const at = Date.now();
    for (const listener of this.onCall) listener(call, at);
  }
}

/** Requests the controller made to the API server, by what they are; a GET of one named object is `get`, of a collection `list`. */
export interface KubeCalls {
  list: number;
  watch: number;
  get: number;
  write: number;
}

/**
 * Counts every request made through `kc`: the generated API clients and the
 * watches both pass each request through `applySecurityAuthentication`, so
 * wrapping it sees them all without a proxy.
 */
export function countKubeCalls(kc: k8s.KubeConfig): KubeCalls {
  const calls: KubeCalls = { list: 0, watch: 0, get: 0, write: 0 };
  const apply = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = (context: k8s.RequestContext) => {
    const url = new URL(context.getUrl());
    if (context.getHttpMethod() !== 'GET') calls.write++;
    else if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') calls.watch++;
    else if (namesOneObject(url.pathname)) calls.get++;
    else calls.list++;
    return apply(context);
  };
  return calls;
}

/** After the version, `networks` and `namespaces/x/networks` are collections; `namespaces/x`, `namespaces/x/networks/y` and its subresources name one object. */
function namesOneObject(path: string): boolean {
  const parts = path.split('/').filter(Boolean);
  const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  return rest.length !== 1 && rest.length !== 3;
}

export function formatCalls(openstack: ApiCounters, kube: KubeCalls): string {
  return `openstack ${openstack.read} reads, ${openstack.write} writes, ${openstack.auth} tokens; kubernetes ${kube.list} lists, ${kube.watch} watches, ${kube.get} gets, ${kube.write} writes`;
}
