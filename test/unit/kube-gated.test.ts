import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { gatedWrites } from '../../agent/kube/gated.ts';

/** A write gate given as a KubeConfig: every request but a GET passes the gate first; the credentials are the original's. */
describe('gatedWrites', () => {
  it('asks the gate before a write (which it stops by throwing), never before a read', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }], users: [{ name: 'u', token: 'the-token' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
    let open = true;
    const asked: string[] = [];
    const gated = gatedWrites(kc, () => {
      asked.push('asked');
      if (!open) throw new Error('not acting any more');
    });
    const read = new RequestContext('https://127.0.0.1:1/api/v1/namespaces/x', HttpMethod.GET);
    await gated.applySecurityAuthentication(read);
    expect(read.getHeaders().Authorization).toBe('Bearer the-token');
    expect(asked).toEqual([]);
    const write = new RequestContext('https://127.0.0.1:1/api/v1/namespaces', HttpMethod.POST);
    await gated.applySecurityAuthentication(write);
    expect(write.getHeaders().Authorization).toBe('Bearer the-token');
    expect(asked).toEqual(['asked']);
    open = false;
    const refused = new RequestContext('https://127.0.0.1:1/api/v1/namespaces/x', HttpMethod.DELETE);
    await expect(gated.applySecurityAuthentication(refused)).rejects.toThrow('not acting any more');
    expect(refused.getHeaders().Authorization).toBeUndefined();
    // The original is not gated: what the controller writes with it (the CR's status) is fenced on its own.
    await kc.applySecurityAuthentication(new RequestContext('https://127.0.0.1:1/api/v1/namespaces', HttpMethod.POST));
    expect(asked).toEqual(['asked', 'asked']);
  });
});
