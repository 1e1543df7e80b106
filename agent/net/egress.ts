import { EgressGate, gateKey, type Resolver } from './egress-gate.ts';
import { rulesFor, type EgressPolicy, type Labels } from './egress-policy.ts';

/**
 * The process's egress policy, set once by the command that runs the agent
 * (controller: on unless --no-egress-policy; standalone: off unless
 * --egress-policy), and the gate of each namespace. Kinds ask `egressFor`
 * where they fetch; `undefined` means no policy (the standalone default).
 */
interface Configured {
  policy: EgressPolicy;
  /** The namespace's labels as the controller's watch has them; {} standalone. */
  labelsOf: (namespace: string) => Labels;
  resolver?: Resolver;
}

let configured: Configured | undefined;
const gates = new Map<string, EgressGate>();

export function configureEgress(c: Configured | undefined): void {
  configured = c;
  for (const g of gates.values()) void g.dispatcher.close().catch(() => undefined);
  gates.clear();
}

export function egressFor(namespace: string): EgressGate | undefined {
  if (!configured) return undefined;
  const labels = configured.labelsOf(namespace);
  // One gate (and its connections) per namespace and set of rules: a relabelled namespace gets a new one.
  const key = gateKey(namespace, rulesFor(configured.policy, labels));
  let gate = gates.get(key);
  if (!gate) {
    gate = new EgressGate(configured.policy, namespace, labels, configured.resolver);
    gates.set(key, gate);
  }
  return gate;
}
