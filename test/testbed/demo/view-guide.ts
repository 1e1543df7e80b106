// The end of `npm run demo` (in-cluster): where the web view is and how to sign
// in to it as a tenant of team-a. A ServiceAccount demo-viewer in team-a with the
// chart's view role bound there only: the view then shows team-a and answers 403
// for team-b, as the API server decides for that token.
import { bold } from './shared.ts';

/** The ServiceAccount and RoleBinding of the demo's tenant (applied with the demo's other objects). */
export function viewerObjects(release: string): object[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'demo-viewer', namespace: 'team-a' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'demo-viewer', namespace: 'team-a' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${release}-view` },
      subjects: [{ kind: 'ServiceAccount', name: 'demo-viewer', namespace: 'team-a' }],
    },
  ];
}

/** What to type to open the view: a port-forward to the Service's `view` port (pods), or the address the controller serves here (--foreground). */
export function viewGuide(o: { system: string; release: string; direct?: string }): string {
  const open = o.direct
    ? `  open http://${o.direct}/`
    : `  kubectl port-forward -n ${o.system} svc/${o.release}-controller 8080:view &
  open http://127.0.0.1:8080/`;
  return `${bold('The web view (read-only; every read is made with the token you sign in with):')}

${open}
  kubectl create token demo-viewer -n team-a --duration 8h   # sign in with it: a tenant of team-a (team-b answers 403)
  # any bearer token the API server trusts signs in (an OIDC ID token where it is set up): you see what its RBAC lets you read

`;
}
