import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { configureEgress } from '../net/egress.ts';
import { makePolicy, parseAllowRule, type AllowRule, type Labels } from '../net/egress-policy.ts';
import { isCidr } from '../util/ip.ts';

/** The egress flags shared by `controller` (policy on by default) and `agent`/`apply` (off by default). */
export interface EgressOptions {
  /** controller: false with --no-egress-policy; agent: true with --egress-policy. */
  egressPolicy: boolean;
  egressAllow: string[];
  egressServiceCidr: string[];
  egressPodCidr: string[];
}

const repeat = (v: string, all: string[]): string[] => [...all, v];

export function withEgressOptions(cmd: Command, defaultOn: boolean): Command {
  return (
    defaultOn
      ? cmd.option(
          '--no-egress-policy',
          "fetch whatever a manifest names (Image URLs, OCI registries) from the controller's network position: only where every tenant is trusted",
        )
      : cmd.option(
          '--egress-policy',
          "refuse fetches for manifests (Image URLs, OCI registries, token realms, redirects) to loopback, link-local, private and the agent's own addresses, as the controller does",
          false,
        )
  )
    .option(
      '--egress-allow <selector=>targets>',
      'open ranges or hosts to namespaces by label: "kupenstack.io/egress=lab=>10.20.0.0/16,registry.lab:5000" ("*" = every namespace); repeatable',
      repeat,
      [],
    )
    .option('--egress-service-cidr <cidr>', "the cluster's Service range, always refused unless a rule names a range inside it; repeatable", repeat, [])
    .option('--egress-pod-cidr <cidr>', "the cluster's pod range, refused like the Service range; repeatable", repeat, []);
}

/** Sets the process's policy from the flags; `labelsOf` reads a namespace's labels (none standalone). */
export function configureEgressFrom(opts: EgressOptions, labelsOf: (namespace: string) => Labels): string {
  if (!opts.egressPolicy) {
    configureEgress(undefined);
    return 'egress policy off: manifests may name any address';
  }
  for (const c of [...opts.egressServiceCidr, ...opts.egressPodCidr])
    if (!isCidr(c)) throw new UsageError(`--egress-service-cidr/--egress-pod-cidr ${c}: not a CIDR`);
  let allow: AllowRule[];
  try {
    allow = opts.egressAllow.map(parseAllowRule);
  } catch (err) {
    throw new UsageError(`--egress-allow ${(err as Error).message}`);
  }
  configureEgress({ policy: makePolicy({ serviceCidrs: opts.egressServiceCidr, podCidrs: opts.egressPodCidr, allow }), labelsOf });
  return `egress policy on: ${allow.length} allow rules${allow.length ? ` (${allow.map((r) => r.text).join('; ')})` : ''}`;
}
