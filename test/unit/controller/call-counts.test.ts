import { KubeConfig, RequestContext, HttpMethod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ClockedCounters, countKubeCalls } from '../../../agent/controller/call-counts.ts';

const kc = (): KubeConfig => {
  const k = new KubeConfig();
  k.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:6443' }], users: [{ name: 'u', token: 't' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  return k;
};

describe('countKubeCalls', () => {
  it('tells lists, watches, per-object GETs and writes apart, and still authenticates each request', async () => {
    const k = kc();
    const calls = countKubeCalls(k);
    const send = async (url: string, method: HttpMethod = HttpMethod.GET): Promise<RequestContext> => {
      const ctx = new RequestContext(`https://127.0.0.1:6443${url}`, method);
      await k.applySecurityAuthentication(ctx);
      return ctx;
    };
    await send('/apis/kupenstack.io/v1alpha1/networks');
    await send('/apis/kupenstack.io/v1alpha1/namespaces/a/networks');
    await send('/api/v1/namespaces');
    await send('/apis/kupenstack.io/v1alpha1/networks?watch=true&resourceVersion=1');
    await send('/apis/kupenstack.io/v1alpha1/namespaces/a/networks/n');
    await send('/apis/kupenstack.io/v1alpha1/namespaces/a/networks/n/status');
    await send('/api/v1/namespaces/a/secrets/s');
    const last = await send('/apis/kupenstack.io/v1alpha1/namespaces/a/networks/n/status', HttpMethod.PATCH);
    expect(calls).toEqual({ list: 3, watch: 1, get: 3, write: 1 });
    expect(last.getHeaders().Authorization).toBe('Bearer t');
  });
});

describe('ClockedCounters', () => {
  it('tells listeners what each call did, a write when it leaves and when it is answered, and still counts every call', () => {
    const c = new ClockedCounters();
    const told: string[] = [];
    c.onCall.add((call) => told.push(call));
    c.sending('network', 'GET');
    c.record('network', 'GET', 200);
    c.sending('identity', 'AUTH');
    c.record('identity', 'AUTH', 201);
    c.sending('network', 'POST');
    c.record('network', 'POST', 201);
    c.sending('network', 'DELETE');
    expect(told).toEqual(['read answered', 'token answered', 'write sent', 'write answered', 'write sent']);
    expect([c.read, c.write, c.auth]).toEqual([1, 1, 1]);
  });
});
