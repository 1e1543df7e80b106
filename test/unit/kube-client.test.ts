import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../agent/kube/client.ts';
import { KubeApiError, KubeConfigError, kubeApiError } from '../../agent/kube/errors.ts';
import { ApiException } from '@kubernetes/client-node';

const dir = mkdtempSync(join(tmpdir(), 'ks-kube-client-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const kubeconfig = (name: string, cluster: string) => {
  const path = join(dir, name);
  writeFileSync(
    path,
    `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", ${cluster}}}]\nusers: [{name: u, user: {token: t0ps3cret}}]\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\ncurrent-context: ctx\n`,
  );
  return path;
};

describe('loadKubeConfig', () => {
  it('takes an explicit kubeconfig before $KUBECONFIG, and a named context', () => {
    const good = kubeconfig('good', 'certificate-authority-data: ""');
    const kc = loadKubeConfig({ kubeconfig: good, env: { KUBECONFIG: join(dir, 'absent') }, context: 'ctx' });
    expect(kc.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(() => loadKubeConfig({ kubeconfig: good, context: 'nope', env: {} })).toThrow(/has no context "nope"; it has: ctx/);
  });

  it('says where it looked when there is no configuration, and never falls back to ~/.kube/config', () => {
    expect(() => loadKubeConfig({ env: {} })).toThrow(KubeConfigError);
    expect(() => loadKubeConfig({ env: {} })).toThrow(/pass --kubeconfig <file>, set KUBECONFIG, or run in a pod/);
    expect(() => loadKubeConfig({ env: { KUBECONFIG: join(dir, 'absent') } })).toThrow(/absent does not exist \(named by \$KUBECONFIG\)/);
    expect(() => loadKubeConfig({ env: { KUBERNETES_SERVICE_HOST: '127.0.0.1' }, inClusterPathPrefix: dir })).toThrow(/no service-account token at .*serviceaccount\/token/);
  });

  it('refuses insecure-skip-tls-verify unless allowed', () => {
    const insecure = kubeconfig('insecure', 'insecure-skip-tls-verify: true');
    expect(() => loadKubeConfig({ kubeconfig: insecure, env: {} })).toThrow(/sets insecure-skip-tls-verify; give its certificate-authority instead/);
    expect(loadKubeConfig({ kubeconfig: insecure, env: {}, allowInsecure: true }).getCurrentCluster()?.skipTLSVerify).toBe(true);
  });
});

describe('kubeApiError', () => {
  it("carries the API server's status, reason and message; never the request's credentials", () => {
    const body = JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: 'networks.kupenstack.io is forbidden: User "x" cannot create resource' });
    const e = kubeApiError('create network team-b/net', new ApiException(403, 'HTTP-Code: 403', body, {}));
    expect(e).toBeInstanceOf(KubeApiError);
    expect(e).toMatchObject({ status: 403, reason: 'Forbidden', code: 'kube-api' });
    expect(e.message).toBe('create network team-b/net: 403 Forbidden: networks.kupenstack.io is forbidden: User "x" cannot create resource');
    expect(kubeApiError('watch', new Error('connect ECONNREFUSED 127.0.0.1:6443'))).toMatchObject({ status: 0, reason: 'Unreachable' });
  });
});
