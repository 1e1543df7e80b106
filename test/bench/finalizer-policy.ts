// The chart's finalizer policy as `helm install` renders it on the test bed's API server, for a bench's
// controller run as a host process: the controller as the chart deploys it (the finalizer set at create).
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { kubectl, kubectlOk, until } from '../integration/controller/harness.ts';
import { builtHelm } from '../testbed/kubernetes/peer.ts';

const repo = join(import.meta.dirname, '../..');
const network = (ns: string, name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: ${name}, namespace: ${ns}}\nspec: {}\n`;

/**
 * The chart's finalizer policy (deploy/chart/kupenstack/templates/finalizer-policy.yaml) for the bench's
 * opt-in label, as `helm install` renders it on this API server: none where it does not serve the API.
 * Returns what removes it.
 */
export async function finalizerPolicy(optIn: string, ns: string): Promise<{ served: boolean; remove: () => void }> {
  const serves = (v: string): boolean => {
    const r = kubectl(['get', '--raw', `/apis/admissionregistration.k8s.io/${v}`]);
    return r.status === 0 && (JSON.parse(r.stdout) as { resources: { name: string }[] }).resources.some((x) => x.name === 'mutatingadmissionpolicies');
  };
  const apiVersions = ['v1', 'v1beta1'].filter(serves).flatMap((v) => ['--api-versions', `admissionregistration.k8s.io/${v}/MutatingAdmissionPolicy`]);
  const release = `ctlb-${optIn.replace(/[^a-z0-9]/g, '')}`.slice(0, 40);
  const rendered = execFileSync(builtHelm(), ['template', release, join(repo, 'deploy/chart/kupenstack'), ...apiVersions, '--set', `controller.optInLabel=${optIn}`, '--show-only', 'templates/finalizer-policy.yaml'], { encoding: 'utf8' });
  if (!rendered.includes('kind: MutatingAdmissionPolicy')) return { served: false, remove: () => undefined };
  kubectlOk(['apply', '-f', '-'], { input: rendered });
  // Taken up by the API server within a second or two: measured from then on (a server-side dry run shows it).
  await until('the finalizer policy to take effect', () => Promise.resolve(kubectl(['create', '--dry-run=server', '-o', 'jsonpath={.metadata.finalizers}', '-f', '-'], { input: network(ns, 'probe') }).stdout.includes('kupenstack.io/finalizer')), 30_000, 250);
  return { served: true, remove: () => void kubectl(['delete', '-f', '-', '--ignore-not-found'], { input: rendered }) };
}

