/**
 * The fixed plan behind the golden files: every action (a no-op too, which
 * no renderer shows), every destructive reason, both kinds of drift, a held
 * mass delete, a moved image tag and warnings. Change it deliberately, then
 * regenerate the golden files and read them: they are the spec of the output.
 */
import { summarize, type Change, type Plan } from '../../agent/plan/plan.ts';

type ChangeSpec = Pick<Change, 'kind' | 'namespace' | 'name' | 'action'> & Partial<Omit<Change, 'address'>>;

/** A change with the defaults of a harmless one; the address is derived as the planner does. */
function change(c: ChangeSpec): Change {
  return { fields: [], destructive: false, reasons: [], ...c, address: `${c.namespace}/${c.kind}/${c.name}` };
}

const digestOld = 'sha256:5a1f0b6c3e9d27f48b0c1d2e3f4a5b6c7d8e9f00112233445566778899aabbcc';
const digestNew = 'sha256:9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29181716151413121110ffeeddccbb';

export const fixtureChanges: Change[] = [
  change({ kind: 'Network', namespace: 'team-a', name: 'backend', action: 'create', fields: [
    { path: 'name', before: undefined, after: 'backend', forcesReplacement: false },
    { path: 'mtu', before: undefined, after: 1450, forcesReplacement: false },
    { path: 'port_security_enabled', before: undefined, after: true, forcesReplacement: false },
  ] }),
  change({ kind: 'Subnet', namespace: 'team-a', name: 'backend-v4', action: 'create', fields: [
    { path: 'cidr', before: undefined, after: '10.20.0.0/24', forcesReplacement: false },
    { path: 'allocation_pools', before: undefined, after: [{ start: '10.20.0.10', end: '10.20.0.200' }], forcesReplacement: false },
  ] }),
  change({ kind: 'SecurityGroup', namespace: 'team-a', name: 'ssh', action: 'noop', id: 'a0c5e0c4-5d0e-4f1e-9d43-3f0e4c1b2a10' }),
  change({ kind: 'Network', namespace: 'team-a', name: 'app-net', action: 'update', id: '7d1f3c2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f', fields: [
    { path: 'mtu', before: 9000, after: 1450, forcesReplacement: false },
  ] }),
  // A long value: cut with an ellipsis in text and Markdown, whole in JSON.
  change({ kind: 'SecurityGroup', namespace: 'team-a', name: 'web', action: 'update', id: '1c9e7b52-2f0d-4b8a-a3c1-6d5e4f3a2b1c', fields: [
    { path: 'description', before: 'web servers', after: 'web servers: http and https from anywhere | managed in Git', forcesReplacement: false },
    { path: 'rules', before: [{ direction: 'ingress', protocol: 'tcp', port_range_min: 80, port_range_max: 80, remote_ip_prefix: '0.0.0.0/0' }], after: [{ direction: 'ingress', protocol: 'tcp', port_range_min: 80, port_range_max: 80, remote_ip_prefix: '0.0.0.0/0' }, { direction: 'ingress', protocol: 'tcp', port_range_min: 443, port_range_max: 443, remote_ip_prefix: '0.0.0.0/0' }], forcesReplacement: false },
  ] }),
  change({ kind: 'VirtualMachine', namespace: 'team-a', name: 'web-1', action: 'update', id: 'c2b7e9a1-4d3f-4e8a-b6c5-9f0e1d2c3b4a', note: 'resize: the server restarts on the new flavor; its disks and addresses are kept', fields: [
    { path: 'flavor', before: { name: 'm1.small', vcpus: 1, ram: 2048, disk: 20 }, after: { name: 'm1.medium', vcpus: 2, ram: 4096, disk: 40 }, forcesReplacement: false },
  ] }),
  // terraform-provider-openstack #1986: a new image is a rebuild that wipes the root disk, never a harmless update.
  change({ kind: 'VirtualMachine', namespace: 'team-a', name: 'web-2', action: 'update', id: '5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716', destructive: true, note: 'rebuild from the new version of team-a/Image/cirros (onImageUpdate: rebuild)', reasons: [
    { code: 'root-disk-lost', message: 'web-2 is rebuilt from the new image: its root disk starts again from the image (local disk, no volume)' },
  ], fields: [
    { path: 'image_id', before: '0b9a8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d', after: 'f1e2d3c4-b5a6-4978-8a9b-0c1d2e3f4a5b', forcesReplacement: false },
  ] }),
  change({ kind: 'KeyPair', namespace: 'team-a', name: 'deploy', action: 'replace', id: 'deploy', fields: [
    { path: 'public_key', before: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOld0ne deploy@ci', after: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINew0ne deploy@ci', forcesReplacement: true },
  ] }),
  change({ kind: 'Port', namespace: 'team-a', name: 'db-1', action: 'replace', id: '3a2b1c0d-9e8f-4a7b-8c6d-5e4f3a2b1c0d', destructive: true, reasons: [
    { code: 'fixed-ip-changes', message: 'db-1 gets a new address on app-net (10.10.0.21 today)' },
  ], fields: [
    { path: 'network_id', before: '7d1f3c2e-8a4b-4c5d-9e6f-0a1b2c3d4e5f', after: '0f9e8d7c-6b5a-4f3e-9d2c-1b0a9f8e7d6c', forcesReplacement: true },
    { path: 'description', before: 'database', after: 'database (backend network)', forcesReplacement: false },
  ] }),
  change({ kind: 'Volume', namespace: 'team-a', name: 'db-1-data', action: 'replace', id: '9c8b7a69-5847-4362-9150-a9b8c7d6e5f4', destructive: true, reasons: [
    { code: 'data-volume-deleted', message: 'db-1-data (100 GiB) is deleted with its data and created empty' },
  ], fields: [
    { path: 'volume_type', before: 'standard', after: 'ssd', forcesReplacement: true },
  ] }),
  change({ kind: 'VirtualMachine', namespace: 'team-a', name: 'db-1', action: 'replace', id: '2d1c0b9a-8f7e-4d6c-9b5a-4f3e2d1c0b9a', destructive: true, reasons: [
    { code: 'root-disk-lost', message: 'db-1 is recreated: its root volume is deleted (deleteOnTermination: true)' },
    { code: 'fixed-ip-changes', message: 'db-1 is recreated on a new port' },
  ], fields: [
    { path: 'user_data', before: '(not observable)', after: 'sha256:4f2a9c1e0b7d3e65', forcesReplacement: true },
  ] }),
  change({ kind: 'Image', namespace: 'team-b', name: 'cirros-0-5', action: 'delete', id: '6f5e4d3c-2b1a-4098-8f7e-6d5c4b3a2918', destructive: true, reasons: [
    { code: 'image-deleted', message: 'cirros-0-5 is deleted from Glance: VMs and volumes made from it can no longer be rebuilt from it' },
  ] }),
  change({ kind: 'Network', namespace: 'team-b', name: 'legacy', action: 'delete', id: '8e7d6c5b-4a39-4281-9f0e-1d2c3b4a5968', destructive: true, reasons: [
    { code: 'dependents-deleted', message: 'legacy takes team-b/Subnet/legacy-v4 with it' },
  ] }),
  change({ kind: 'SecurityGroup', namespace: 'team-b', name: 'old-web', action: 'delete', id: '4b3a2918-0f7e-4d6c-8b5a-49382716f5e4', destructive: true, reasons: [
    { code: 'object-deleted', message: 'old-web is no longer declared in Git' },
  ] }),
  change({ kind: 'VirtualMachine', namespace: 'team-b', name: 'web', action: 'heal', id: 'e1d2c3b4-a596-4877-9a8b-7c6d5e4f3a2b', heal: { step: 'reboot', attempt: 1, reason: 'server in ERROR since 2025-06-01T10:02:00Z' } }),
  change({ kind: 'VirtualMachine', namespace: 'team-b', name: 'worker', action: 'heal', id: 'b4a59687-7869-4a5b-9c0d-1e2f3a4b5c6d', destructive: true, heal: { step: 'rebuild', attempt: 3, reason: 'a reboot did not bring it back (attempts 1 and 2)' }, reasons: [
    { code: 'root-disk-lost', message: 'worker is rebuilt: its root disk starts again from team-b/Image/ubuntu' },
  ] }),
];

export const fixturePlan: Plan = {
  revision: '4c1d9e7a2b3f5061728394a5b6c7d8e9f0a1b2c3',
  against: 'main (0a1b2c3d4e5f60718293a4b5c6d7e8f901234567)',
  summary: summarize(fixtureChanges),
  changes: fixtureChanges,
  drift: [
    { address: 'team-a/Network/app-net', path: 'mtu', expected: 1450, actual: 9000, immutable: false },
    { address: 'team-a/Subnet/app', path: 'gateway_ip', expected: '10.10.0.1', actual: '10.10.0.254', immutable: true },
  ],
  held: [
    { address: 'team-old/VirtualMachine/batch-1', action: 'delete', reason: 'this revision deletes 3 of 4 owned objects (more than 50 %); confirm with --allow-mass-delete' },
    { address: 'team-old/Volume/batch-1-scratch', action: 'delete', reason: 'this revision deletes 3 of 4 owned objects (more than 50 %); confirm with --allow-mass-delete' },
    { address: 'team-old/Network/batch', action: 'delete', reason: 'this revision deletes 3 of 4 owned objects (more than 50 %); confirm with --allow-mass-delete' },
  ],
  images: [
    { address: 'team-a/Image/cirros', reference: 'registry.example.com/images/cirros:0.6', from: digestOld, to: digestNew },
    { address: 'team-b/Image/ubuntu', reference: 'registry.example.com/images/ubuntu:24.04', to: digestNew },
  ],
  warnings: [
    'team-a/Network/public: import is observe-only; KupenStack never changes or deletes an object it did not create',
    'team-a/ProjectQuota/quota: cores 40 < 48 in use | Nova refuses new servers until usage drops below the quota',
  ],
};
