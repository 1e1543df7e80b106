/**
 * OpenStack's default policy for a project member, mirrored for tenant
 * namespaces. Calls made with the project's own token (the agent holds
 * `member` there) are judged by OpenStack itself, but some go with the
 * agent's admin scope: flavors (cloud-wide, admin-only to create), Neutron
 * bulk creates, shared images. Those skip OpenStack's member checks, so a
 * field OpenStack lets only an admin set would be set for any tenant. Each
 * rule names the OpenStack policy it mirrors; an admin namespace (label
 * kupenstack.io/admin=true, which a tenant cannot set on its own namespace)
 * is not checked.
 *
 * Where CEL can express a rule, `cel` is the same rule for the API server's
 * ValidatingAdmissionPolicy (admission.ts writes it): refused at `kubectl
 * apply`. The controller checks every rule again (a cluster without the
 * policy, objects stored before it) and leaves a refused object Stalled.
 */

export const adminLabel = { key: 'kupenstack.io/admin', value: 'true' } as const;

/** The roles a project member holds in Keystone's defaults (member implies reader): what it could delegate itself. */
export const memberRoles: readonly string[] = ['member', 'reader'];

export interface MemberPolicyOptions {
  /** Flavor extra spec keys a tenant may set (the cluster admin's allow-list, --flavor-extra-spec); default none. */
  flavorExtraSpecs: readonly string[];
}

/** One object as the rules see it. */
export interface PolicySubject {
  address: string;
  kind: string;
  name: string;
  spec: Record<string, unknown>;
}

/** The namespace's other objects (a port's network: its own, or imported from another project). */
export interface PolicyView {
  find(kind: string, name: string): PolicySubject | undefined;
}

export interface MemberRule {
  kind: string;
  /** Stable code (`flavor.extra-specs`), shown in brackets in messages as validate's codes are. */
  code: string;
  /** The field, as the manifest writes it. */
  field: string;
  /** The OpenStack default policy this mirrors, for the message and the README's table. */
  openstack: string;
  /** Names what is refused, or undefined when the spec keeps within the rule. */
  check(spec: Record<string, unknown>, opts: MemberPolicyOptions, view: PolicyView): string | undefined;
  /** A CEL expression on `object.spec` that is true when the rule holds (allow-list as `ALLOWED_EXTRA_SPECS`); absent when CEL cannot see what it needs. */
  cel?: string;
}

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const refName = (v: unknown): string | undefined => (typeof obj(v).name === 'string' ? (obj(v).name as string) : undefined);

/** A port field Neutron lets only the network's owner (or an admin) set: refused on a network the namespace imports. */
function onOwnNetwork(field: string, present: (spec: Record<string, unknown>) => boolean): MemberRule['check'] {
  return (spec, _opts, view) => {
    if (!present(spec)) return undefined;
    const net = refName(spec.networkRef);
    const network = net ? view.find('Network', net) : undefined;
    // An adopted network (`import.adopt`, what `kupenstack export` writes) is the project's own: adoption refuses another project's object.
    return network && network.spec.import !== undefined && obj(network.spec.import).adopt !== true
      ? `${field} on Network "${net}", which is imported (another project's network)`
      : undefined;
  };
}

export const memberRules: readonly MemberRule[] = [
  {
    kind: 'Flavor',
    code: 'flavor.extra-specs',
    field: 'spec.extraSpecs',
    openstack:
      'os_compute_api:os-flavor-manage:create and os-flavor-extra-specs:create are admin-only (extra specs pick hosts, PCI devices, CPU pinning, quotas)',
    check: (spec, opts) => {
      const keys = Object.keys(obj(spec.extraSpecs)).filter((k) => !opts.flavorExtraSpecs.includes(k));
      return keys.length
        ? `extra specs ${keys.map((k) => JSON.stringify(k)).join(', ')} (allowed in tenant namespaces: ${opts.flavorExtraSpecs.length ? opts.flavorExtraSpecs.join(', ') : 'none'})`
        : undefined;
    },
    cel: '!has(object.spec.extraSpecs) || object.spec.extraSpecs.all(k, k in ALLOWED_EXTRA_SPECS)',
  },
  {
    kind: 'Flavor',
    code: 'flavor.public',
    field: 'spec.isPublic',
    openstack: 'os_compute_api:os-flavor-manage:create is admin-only; a public flavor is offered to every project',
    check: (spec) => (spec.isPublic === true ? 'isPublic: true' : undefined),
    cel: '!has(object.spec.isPublic) || object.spec.isPublic == false',
  },
  {
    kind: 'Network',
    code: 'network.shared',
    field: 'spec.shared',
    openstack: 'create_network:shared is admin_only',
    check: (spec) => (spec.shared === true ? 'shared: true' : undefined),
    cel: '!has(object.spec.shared) || object.spec.shared == false',
  },
  {
    kind: 'Network',
    code: 'network.external',
    field: 'spec.external',
    openstack: 'create_network:router:external is admin_only',
    check: (spec) => (spec.external === true ? 'external: true' : undefined),
    cel: '!has(object.spec.external) || object.spec.external == false',
  },
  {
    kind: 'Network',
    code: 'network.provider',
    field: 'spec.provider',
    openstack: 'create_network:provider:network_type, :physical_network and :segmentation_id are admin_only',
    check: (spec) => (spec.provider !== undefined ? 'provider attributes' : undefined),
    cel: '!has(object.spec.provider)',
  },
  {
    kind: 'Router',
    code: 'router.distributed',
    field: 'spec.distributed',
    openstack: 'create_router:distributed is admin_only',
    check: (spec) => (spec.distributed !== undefined ? `distributed: ${JSON.stringify(spec.distributed)}` : undefined),
    cel: '!has(object.spec.distributed)',
  },
  {
    kind: 'Router',
    code: 'router.ha',
    field: 'spec.ha',
    openstack: 'create_router:ha is admin_only',
    check: (spec) => (spec.ha !== undefined ? `ha: ${JSON.stringify(spec.ha)}` : undefined),
    cel: '!has(object.spec.ha)',
  },
  {
    kind: 'FloatingIP',
    code: 'floatingip.address',
    field: 'spec.floatingIPAddress',
    openstack: 'create_floatingip:floating_ip_address is admin_only',
    check: (spec) => (spec.floatingIPAddress !== undefined ? `floatingIPAddress ${JSON.stringify(spec.floatingIPAddress)}` : undefined),
    cel: '!has(object.spec.floatingIPAddress)',
  },
  {
    kind: 'VirtualMachine',
    code: 'virtualmachine.forced-host',
    field: 'spec.availabilityZone',
    openstack: 'os_compute_api:servers:create:forced_host is admin-only (availability_zone "zone:host[:node]" picks the host)',
    check: (spec) =>
      typeof spec.availabilityZone === 'string' && spec.availabilityZone.includes(':')
        ? `availabilityZone ${JSON.stringify(spec.availabilityZone)} names a host`
        : undefined,
    cel: "!has(object.spec.availabilityZone) || !object.spec.availabilityZone.contains(':')",
  },
  {
    kind: 'Image',
    code: 'image.public',
    field: 'spec.visibility',
    openstack: 'publicize_image is admin-only',
    check: (spec) => (spec.visibility === 'public' ? 'visibility: public' : undefined),
    cel: "!has(object.spec.visibility) || object.spec.visibility != 'public'",
  },
  {
    kind: 'ApplicationCredential',
    code: 'applicationcredential.roles',
    field: 'spec.roles',
    openstack:
      'identity:create_grant is admin; a user may put in an application credential only roles it holds (a member holds member and reader), ' +
      'and an admin role on any project is admin of the whole cloud for most services',
    check: (spec) => {
      const extra = (Array.isArray(spec.roles) ? (spec.roles as unknown[]) : []).filter((r) => !memberRoles.includes(String(r)));
      return extra.length
        ? `roles ${extra.map((r) => JSON.stringify(r)).join(', ')} (a tenant namespace may delegate ${memberRoles.join(' and ')})`
        : undefined;
    },
    cel: `!has(object.spec.roles) || object.spec.roles.all(r, r in [${memberRoles.map((r) => `'${r}'`).join(', ')}])`,
  },
  {
    kind: 'ApplicationCredential',
    code: 'applicationcredential.unrestricted',
    field: 'spec.unrestricted',
    openstack:
      'identity:create_application_credential and identity:create_trust refuse a token from a restricted application credential; ' +
      'an unrestricted one lets its holder mint more credentials that outlive every rotation',
    check: (spec) => (spec.unrestricted === true ? 'unrestricted: true' : undefined),
    cel: '!has(object.spec.unrestricted) || object.spec.unrestricted == false',
  },
  {
    kind: 'Port',
    code: 'port.foreign-network',
    field: 'spec.macAddress, spec.fixedIPs[].ipAddress, spec.portSecurityEnabled, spec.allowedAddressPairs',
    openstack: 'create_port:mac_address, :fixed_ips:ip_address, :port_security_enabled and :allowed_address_pairs are admin_or_network_owner',
    check: onOwnNetwork(
      'macAddress, a fixed ipAddress, portSecurityEnabled or allowedAddressPairs',
      (spec) =>
        spec.macAddress !== undefined ||
        spec.portSecurityEnabled !== undefined ||
        (Array.isArray(spec.allowedAddressPairs) && spec.allowedAddressPairs.length > 0) ||
        (Array.isArray(spec.fixedIPs) && spec.fixedIPs.some((f) => obj(f).ipAddress !== undefined)),
    ),
  },
];

/**
 * What the member policy refuses among a tenant namespace's objects: address
 * → one message per broken rule, each naming the code, the field and the
 * OpenStack policy. Nothing for an admin namespace.
 */
export function memberRefusals(subjects: readonly PolicySubject[], admin: boolean, opts: MemberPolicyOptions): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (admin) return out;
  const view: PolicyView = { find: (kind, name) => subjects.find((s) => s.kind === kind && s.name === name) };
  for (const s of subjects) {
    for (const rule of memberRules) {
      if (rule.kind !== s.kind) continue;
      const what = rule.check(s.spec, opts, view);
      if (what) out.set(s.address, [...(out.get(s.address) ?? []), refusalMessage(rule, what)]);
    }
  }
  return out;
}

function refusalMessage(rule: MemberRule, what: string): string {
  return `[${rule.code}] ${rule.field}: ${what} is allowed only in admin namespaces (label ${adminLabel.key}=${adminLabel.value}); OpenStack's default policy: ${rule.openstack}`;
}

export function isAdminNamespace(labels: Readonly<Record<string, string>> | undefined): boolean {
  return labels?.[adminLabel.key] === adminLabel.value;
}
