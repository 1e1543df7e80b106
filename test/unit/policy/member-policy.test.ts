import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { kustomizeMemberPolicy } from '../../../agent/policy/admission.ts';
import { isAdminNamespace, memberRefusals, memberRules, type PolicySubject } from '../../../agent/policy/member-policy.ts';

const subject = (kind: string, name: string, spec: Record<string, unknown>): PolicySubject => ({ address: `team-a/${kind}/${name}`, kind, name, spec });
const none = { flavorExtraSpecs: [] };

/** True when `spec` sets the field named as a rule names it (`spec.a`, `spec.list[].b`). */
function sets(spec: Record<string, unknown>, field: string): boolean {
  const [top, inner] = field.replace(/^spec\./, '').split('[].');
  const value = spec[top!];
  if (inner === undefined) return value !== undefined;
  return Array.isArray(value) && value.some((v) => (v as Record<string, unknown>)[inner] !== undefined);
}

/** Every admin-only field on the list, set the way a tenant would, the rule code that must refuse it, and the field (as the rule names it) the case sets. */
const cases: [string, PolicySubject[], string, string][] = [
  ['a Flavor with pci_passthrough:alias', [subject('Flavor', 'gpu', { vcpus: 1, ram: 512, extraSpecs: { 'pci_passthrough:alias': 'a1:1' } })], 'flavor.extra-specs', 'spec.extraSpecs'],
  ['a Flavor with aggregate_instance_extra_specs', [subject('Flavor', 'f', { vcpus: 1, ram: 512, extraSpecs: { 'aggregate_instance_extra_specs:ssd': 'true' } })], 'flavor.extra-specs', 'spec.extraSpecs'],
  ['a Flavor with hw:cpu_policy', [subject('Flavor', 'f', { vcpus: 1, ram: 512, extraSpecs: { 'hw:cpu_policy': 'dedicated' } })], 'flavor.extra-specs', 'spec.extraSpecs'],
  ['a Flavor with quota:cpu_shares', [subject('Flavor', 'f', { vcpus: 1, ram: 512, extraSpecs: { 'quota:cpu_shares': '4096' } })], 'flavor.extra-specs', 'spec.extraSpecs'],
  ['a public Flavor', [subject('Flavor', 'f', { vcpus: 1, ram: 512, isPublic: true })], 'flavor.public', 'spec.isPublic'],
  ['a shared Network', [subject('Network', 'n', { shared: true })], 'network.shared', 'spec.shared'],
  ['an external Network', [subject('Network', 'n', { external: true })], 'network.external', 'spec.external'],
  ['provider attributes', [subject('Network', 'n', { provider: { networkType: 'vlan', physicalNetwork: 'physnet1', segmentationId: 100 } })], 'network.provider', 'spec.provider'],
  ['a distributed Router', [subject('Router', 'r', { distributed: false })], 'router.distributed', 'spec.distributed'],
  ['an HA Router', [subject('Router', 'r', { ha: true })], 'router.ha', 'spec.ha'],
  ['a chosen floating address', [subject('FloatingIP', 'f', { externalNetwork: { filter: { name: 'public' } }, floatingIPAddress: '172.24.4.50' })], 'floatingip.address', 'spec.floatingIPAddress'],
  ['a VM forced onto a host', [subject('VirtualMachine', 'vm', { availabilityZone: 'nova:compute-1' })], 'virtualmachine.forced-host', 'spec.availabilityZone'],
  ['a public Image', [subject('Image', 'i', { visibility: 'public', source: { url: { url: 'https://example.org/d' } } })], 'image.public', 'spec.visibility'],
  ['an application credential with the admin role', [subject('ApplicationCredential', 'ccm', { roles: ['member', 'admin'], secretRef: { name: 'ccm-cloud' } })], 'applicationcredential.roles', 'spec.roles'],
  ['an unrestricted application credential', [subject('ApplicationCredential', 'ci', { roles: ['member'], secretRef: { name: 'ci-cloud' }, unrestricted: true })], 'applicationcredential.unrestricted', 'spec.unrestricted'],
  [
    'allowed_address_pairs 0.0.0.0/0 on an imported network',
    [subject('Network', 'theirs', { import: { id: '6b0c0e8e-0000-4000-8000-000000000001' } }), subject('Port', 'p', { networkRef: { name: 'theirs' }, allowedAddressPairs: [{ ipAddress: '0.0.0.0/0' }] })],
    'port.foreign-network',
    'spec.allowedAddressPairs',
  ],
  ['port security off on an imported network', [subject('Network', 'theirs', { import: { id: '6b0c0e8e-0000-4000-8000-000000000001' } }), subject('Port', 'p', { networkRef: { name: 'theirs' }, portSecurityEnabled: false })], 'port.foreign-network', 'spec.portSecurityEnabled'],
  ['a MAC address on an imported network', [subject('Network', 'theirs', { import: { id: '6b0c0e8e-0000-4000-8000-000000000001' } }), subject('Port', 'p', { networkRef: { name: 'theirs' }, macAddress: 'fa:16:3e:00:00:01' })], 'port.foreign-network', 'spec.macAddress'],
  [
    'a fixed ipAddress on an imported network',
    [
      subject('Network', 'theirs', { import: { id: '6b0c0e8e-0000-4000-8000-000000000001' } }),
      subject('Port', 'p', { networkRef: { name: 'theirs' }, fixedIPs: [{ subnetRef: { name: 's' } }, { subnetRef: { name: 's' }, ipAddress: '10.0.0.1' }] }),
    ],
    'port.foreign-network',
    'spec.fixedIPs[].ipAddress',
  ],
];

describe('OpenStack\'s admin-only fields in a tenant namespace', () => {
  it.each(cases)('%s is refused with its rule, the field and the OpenStack policy it mirrors', (_what, subjects, code) => {
    const refused = memberRefusals(subjects, false, none);
    const target = subjects[subjects.length - 1]!;
    expect([...refused.keys()]).toEqual([target.address]);
    const [message] = refused.get(target.address)!;
    const rule = memberRules.find((r) => r.code === code)!;
    expect(message).toContain(`[${code}] ${rule.field}`);
    expect(message).toContain('allowed only in admin namespaces (label kupenstack.io/admin=true)');
    expect(message).toContain(rule.openstack);
  });

  it.each(cases)('%s applies in an admin namespace', (_what, subjects) => {
    expect(memberRefusals(subjects, true, none).size).toBe(0);
  });

  it('every rule on the list has a case above', () => {
    expect(new Set(cases.map((c) => c[2]))).toEqual(new Set(memberRules.map((r) => r.code)));
  });

  // By field, not by rule: one rule (port.foreign-network) covers four fields, and each must be refused on its own.
  it('every field of every rule has a case above, and each case sets the field it names', () => {
    const fields = memberRules.flatMap((r) => r.field.split(', ').map((f) => `${r.code} ${f}`));
    expect(fields.length).toBeGreaterThan(memberRules.length);
    expect(new Set(cases.map((c) => `${c[2]} ${c[3]}`))).toEqual(new Set(fields));
    // Only that field of its rule: a case that also set another would not prove its own field refused.
    for (const [what, subjects, code, field] of cases) {
      const spec = subjects[subjects.length - 1]!.spec;
      const others = memberRules.find((r) => r.code === code)!.field.split(', ').filter((f) => f !== field);
      expect([sets(spec, field), ...others.map((f) => sets(spec, f))], what).toEqual([true, ...others.map(() => false)]);
    }
  });

  it('a fixed ipAddress alone is refused on an imported network; a fixed subnet without an address is not', () => {
    const theirs = subject('Network', 'theirs', { import: { id: '6b0c0e8e-0000-4000-8000-000000000001' } });
    const port = (fixedIPs: unknown[]) => subject('Port', 'p', { networkRef: { name: 'theirs' }, fixedIPs });
    expect([...memberRefusals([theirs, port([{ ipAddress: '10.0.0.1' }])], false, none).keys()]).toEqual(['team-a/Port/p']);
    expect(memberRefusals([theirs, port([{ subnetRef: { name: 's' } }])], false, none)).toEqual(new Map());
  });

  it('what a member may do passes: a private Flavor, its own network\'s port with 0.0.0.0/0 pairs and port security off, a zone without a host', () => {
    const subjects = [
      subject('Flavor', 'small', { vcpus: 1, ram: 512, isPublic: false }),
      subject('Network', 'mine', { portSecurityEnabled: false, shared: false }),
      subject('Port', 'p', { networkRef: { name: 'mine' }, allowedAddressPairs: [{ ipAddress: '0.0.0.0/0' }], portSecurityEnabled: false, macAddress: 'fa:16:3e:00:00:02' }),
      subject('VirtualMachine', 'vm', { availabilityZone: 'nova' }),
      subject('Image', 'i', { visibility: 'community' }),
      // An adopted network is the project's own (an export's port keeps its address).
      subject('Network', 'adopted', { import: { id: '6b0c0e8e-0000-4000-8000-000000000002', adopt: true } }),
      subject('Port', 'vip', { networkRef: { name: 'adopted' }, fixedIPs: [{ subnetRef: { name: 's' }, ipAddress: '10.0.0.10' }] }),
    ];
    expect(memberRefusals(subjects, false, none)).toEqual(new Map());
  });

  it('the cluster admin\'s allow-list lets those extra specs through, and only those', () => {
    const f = subject('Flavor', 'f', { vcpus: 1, ram: 512, extraSpecs: { 'hw:mem_page_size': 'large', 'pci_passthrough:alias': 'a1:1' } });
    const refused = memberRefusals([f], false, { flavorExtraSpecs: ['hw:mem_page_size'] });
    expect(refused.get(f.address)).toEqual([expect.stringContaining('extra specs "pci_passthrough:alias" (allowed in tenant namespaces: hw:mem_page_size)')]);
    expect(memberRefusals([f], false, { flavorExtraSpecs: ['hw:mem_page_size', 'pci_passthrough:alias'] }).size).toBe(0);
  });

  it('an admin namespace is the label kupenstack.io/admin=true, nothing else', () => {
    expect(isAdminNamespace({ 'kupenstack.io/admin': 'true' })).toBe(true);
    expect(isAdminNamespace({ 'kupenstack.io/admin': 'yes' })).toBe(false);
    expect(isAdminNamespace({})).toBe(false);
    expect(isAdminNamespace(undefined)).toBe(false);
  });
});

describe('the admission policy holds every rule CEL can express', () => {
  const [policy, binding] = kustomizeMemberPolicy().split('\n---\n').map((d) => parse(d) as { kind: string; spec: { validations?: { expression: string; message: string }[]; matchConditions?: { expression: string }[]; validationActions?: string[] } });
  it('one validation per rule with CEL, each scoped to its kind, and a binding that denies', () => {
    const withCel = memberRules.filter((r) => r.cel);
    expect(withCel.length).toBeGreaterThan(8);
    expect(policy!.spec.validations!.map((v) => v.message.slice(0, v.message.indexOf(']') + 1))).toEqual(withCel.map((r) => `[${r.code}]`));
    for (const [i, r] of withCel.entries()) expect(policy!.spec.validations![i]!.expression).toContain(`object.kind != '${r.kind}'`);
    // namespaceObject is not there in matchConditions: each validation checks the label itself.
    for (const v of policy!.spec.validations!) expect(v.expression).toContain("namespaceObject.metadata.labels['kupenstack.io/admin'] == 'true'");
    expect(JSON.stringify(policy!.spec.matchConditions)).not.toContain('namespaceObject');
    expect(binding!.kind).toBe('ValidatingAdmissionPolicyBinding');
    expect(binding!.spec.validationActions).toEqual(['Deny']);
  });
});

/**
 * repo-template is what a new user pushes first (and what `npm run demo` syncs into tenant
 * namespaces): every object in it must pass the default member policy, or the first Sync is
 * rejected at admission (a Flavor with `hw:cpu_policy` once was).
 */
describe('repo-template under the default member policy', () => {
  it('refuses nothing in its tenant namespaces', () => {
    const root = join(import.meta.dirname, '../../../repo-template/tenants');
    const byNamespace = new Map<string, PolicySubject[]>();
    for (const file of readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => /\.ya?ml$/.test(f)).sort()) {
      for (const doc of parseAllDocuments(readFileSync(join(root, file), 'utf8'))) {
        const value = doc.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string }; spec?: Record<string, unknown> } | null;
        if (!value?.kind || !value.metadata?.namespace) continue;
        const list = byNamespace.get(value.metadata.namespace) ?? [];
        list.push({ address: `tenants/${file}`, kind: value.kind, name: value.metadata.name ?? '', spec: value.spec ?? {} });
        byNamespace.set(value.metadata.namespace, list);
      }
    }
    expect([...byNamespace.keys()].sort()).toEqual(['team-a', 'team-b']);
    expect([...byNamespace.values()].flat().map((s) => s.kind)).toContain('Flavor');
    const refused = [...byNamespace.values()].flatMap((subjects) => [...memberRefusals(subjects, false, none)].map(([address, why]) => `${address}: ${why.join('; ')}`));
    expect(refused).toEqual([]);
  });
});
