import * as k8s from '@kubernetes/client-node';
import { kubeApiError } from '../kube/errors.ts';
import { ViewError } from './view-error.ts';

/**
 * A Kubernetes client that is the signed-in person: the controller's cluster
 * entry (server and CA) with the person's bearer token as the only
 * credential, so the API server authorises every read as them. Nothing of
 * the controller's own identity (its token, client certificate or
 * impersonation) is carried over.
 */
export function userKubeConfig(base: k8s.KubeConfig, token: string): k8s.KubeConfig {
  const cluster = base.getCurrentCluster();
  if (!cluster) throw new ViewError(500, `the view's kubeconfig (context "${base.getCurrentContext()}") names no cluster`, { code: 'internal' });
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'view-user', token }],
    contexts: [{ name: 'view', cluster: cluster.name, user: 'view-user' }],
    currentContext: 'view',
  });
  return kc;
}

export interface Identity {
  username: string;
  groups: string[];
}

/**
 * Who the token is, asked with the token itself (SelfSubjectReview,
 * authentication.k8s.io/v1, Kubernetes 1.28+): any token the API server
 * accepts (a ServiceAccount's, an OIDC ID token it trusts) answers, and the
 * controller needs no TokenReview right. A refused token is a 401.
 */
export async function whoIs(kc: k8s.KubeConfig): Promise<Identity> {
  const api = kc.makeApiClient(k8s.AuthenticationV1Api);
  try {
    const review = await api.createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
    const info = review.status?.userInfo;
    if (!info?.username) throw new ViewError(401, 'the API server did not say who this token is', { code: 'unauthenticated' });
    return { username: info.username, groups: info.groups ?? [] };
  } catch (err) {
    if (err instanceof ViewError) throw err;
    const e = kubeApiError('sign in', err);
    if (e.status === 401) throw new ViewError(401, 'the API server does not accept this token', { cause: e });
    throw new ViewError(502, `sign in: the API server answered ${e.message}`, { cause: e, code: 'upstream' });
  }
}

/** Whether the person may `verb` the kind's objects in the namespace (SelfSubjectAccessReview, asked with their token). */
export async function may(kc: k8s.KubeConfig, verb: string, resource: { group: string; resource: string; namespace?: string }): Promise<boolean> {
  const api = kc.makeApiClient(k8s.AuthorizationV1Api);
  try {
    const r = await api.createSelfSubjectAccessReview({
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb, ...resource } } },
    });
    return r.status?.allowed === true;
  } catch (err) {
    throw kubeApiError(`ask whether you may ${verb} ${resource.resource}`, err);
  }
}
