/**
 * The bad-input corpus: each case is a small revision (files by path) and the
 * exact errors `kupenstack validate` must report for it, by code and position.
 * `base` is a valid tenant every case may lean on for references.
 */
export interface CorpusCase {
  name: string;
  files: Record<string, string | Buffer | { symlink: string }>;
  /** `code file:line:column`, in the validator's (sorted) order. */
  errors: string[];
  /** Load limits for this case, when it tests them. */
  limits?: { maxFileBytes: number; maxRevisionBytes: number };
  /** Leave out the base tenant. */
  alone?: boolean;
}

export const base: Record<string, string> = {
  'base/net.yaml': `apiVersion: kupenstack.io/v1alpha1
kind: Network
metadata:
  name: app-net
  namespace: team-a
spec:
  mtu: 1450
---
apiVersion: kupenstack.io/v1alpha1
kind: Subnet
metadata:
  name: app-subnet
  namespace: team-a
spec:
  networkRef: {name: app-net}
  cidr: 10.0.0.0/24
  gatewayIP: 10.0.0.1
  allocationPools:
    - {start: 10.0.0.10, end: 10.0.0.200}
`,
  'base/compute.yaml': `apiVersion: kupenstack.io/v1alpha1
kind: Flavor
metadata: {name: small, namespace: team-a}
spec: {vcpus: 1, ram: 512, disk: 1}
---
apiVersion: kupenstack.io/v1alpha1
kind: Image
metadata: {name: cirros, namespace: team-a}
spec:
  diskFormat: qcow2
  source:
    oci: {repository: 127.0.0.1:5050/vm/cirros, tag: "0.6", insecure: true}
---
apiVersion: kupenstack.io/v1alpha1
kind: SecurityGroup
metadata: {name: ssh, namespace: team-a}
spec:
  rules:
    - {direction: ingress, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: 0.0.0.0/0}
`,
};

const cloud = (spec: string, name = 'cloud'): string => `apiVersion: kupenstack.io/v1alpha1\nkind: OpenStackCloud\nmetadata: {name: ${name}}\nspec:\n${spec}`;

const head = (kind: string, name: string, ns = 'team-a'): string =>
  `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n`;

const vm = (spec: string): string => `${head('VirtualMachine', 'vm1')}${spec}`;
const subnet = (spec: string, name = 's2'): string => `${head('Subnet', name)}  networkRef: {name: app-net}\n${spec}`;
const sgRule = (rule: string): string => `${head('SecurityGroup', 'sg1')}  rules:\n    - ${rule}\n`;

export const cases: CorpusCase[] = [
  // --- files and YAML syntax
  { name: 'YAML syntax error: unclosed flow mapping', files: { 'bad.yaml': `${head('Network', 'n1')}  tags: [a, b\n` }, errors: ['yaml.syntax bad.yaml:8:1'] },
  { name: 'YAML duplicate key', files: { 'bad.yaml': `${head('Network', 'n1')}  mtu: 1400\n  mtu: 1500\n` }, errors: ['yaml.duplicate-key bad.yaml:8:3'] },
  { name: 'YAML tab indentation', files: { 'bad.yaml': `${head('Network', 'n1')}\tmtu: 1400\n` }, errors: ['yaml.tab-indent bad.yaml:7:1'] },
  { name: 'JSON syntax error (trailing comma)', files: { 'bad.json': '{"apiVersion": "kupenstack.io/v1alpha1", "kind": "Network",\n  "metadata": {"name": "n1", "namespace": "team-a",},\n  "spec": {}}\n' }, errors: ['json.syntax bad.json:2:52'] },
  { name: 'empty file', files: { 'empty.yaml': '' }, errors: ['file.empty empty.yaml:1:1'] },
  { name: 'file with only comments and separators', files: { 'comments.yaml': '# nothing here\n---\n# still nothing\n' }, errors: ['file.empty comments.yaml:1:1'] },
  { name: 'a list instead of a manifest', files: { 'list.yaml': '- apiVersion: kupenstack.io/v1alpha1\n  kind: Network\n' }, errors: ['document.not-object list.yaml:1:1'] },
  { name: 'a scalar document in a multi-document file; the others still count', files: { 'multi.yaml': `${head('Network', 'n1')}  mtu: 1400\n---\njust a string\n---\n${head('Network', 'n2')}  mtu: 99999\n` }, errors: ['document.not-object multi.yaml:9:1', 'schema.range multi.yaml:17:8'] },
  { name: 'alias bomb ("billion laughs")', files: { 'bomb.yaml': `a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n` }, errors: ['yaml.aliases bomb.yaml:1:1'] },
  { name: 'binary file', files: { 'disk.yaml': Buffer.from([0x51, 0x46, 0x49, 0xfb, 0, 0, 0, 3, 0, 0]) }, errors: ['file.binary disk.yaml:0:0'] },
  { name: 'file that is not UTF-8 (Latin-1)', files: { 'latin1.yaml': Buffer.from(`${head('Network', 'n1')}  description: caf\xe9\n`, 'latin1') }, errors: ['file.encoding latin1.yaml:0:0'] },
  { name: 'file over the size limit', files: { 'huge.yaml': `${head('Network', 'n1')}  description: ${'x'.repeat(2 * 1024 * 1024)}\n` }, errors: ['file.too-large huge.yaml:0:0'] },
  { name: 'revision over the size limit', limits: { maxFileBytes: 1024 * 1024, maxRevisionBytes: 600 }, files: { 'a.yaml': `${head('Network', 'n1')}  description: ${'a'.repeat(200)}\n`, 'b.yaml': `${head('Network', 'n2')}  description: ${'b'.repeat(200)}\n`, 'c.yaml': `${head('Network', 'n3')}  description: ${'c'.repeat(200)}\n` }, alone: true, errors: ['revision.too-large b.yaml:0:0'] },
  { name: 'symbolic link that leaves the root', files: { 'escape.yaml': { symlink: '/etc/hostname' } }, errors: ['file.symlink-escape escape.yaml:0:0'] },
  { name: 'symbolic link that points nowhere', files: { 'dangling.yaml': { symlink: 'no/such/file.yaml' } }, errors: ['file.symlink-broken dangling.yaml:0:0'] },

  // --- apiVersion, kind, metadata
  { name: 'missing apiVersion', files: { 'a.yaml': 'kind: Network\nmetadata: {name: n1, namespace: team-a}\nspec: {}\n' }, errors: ['apiversion.missing a.yaml:1:1'] },
  { name: 'unknown version of our group', files: { 'a.yaml': 'apiVersion: kupenstack.io/v1\nkind: Network\nmetadata: {name: n1, namespace: team-a}\nspec: {}\n' }, errors: ['apiversion.unknown a.yaml:1:13'] },
  { name: 'a Kubernetes Deployment in the repo', files: { 'deploy.yaml': 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {}\n' }, errors: ['apiversion.unknown deploy.yaml:1:13', 'kind.unknown deploy.yaml:2:7'] },
  { name: 'missing kind', files: { 'a.yaml': 'apiVersion: kupenstack.io/v1alpha1\nmetadata: {name: n1, namespace: team-a}\nspec: {}\n' }, errors: ['kind.missing a.yaml:1:1'] },
  { name: 'misspelt kind', files: { 'a.yaml': head('Netwrok', 'n1').replace('spec:\n', 'spec: {}\n') }, errors: ['kind.unknown a.yaml:2:7'] },
  { name: 'missing metadata', files: { 'a.yaml': 'apiVersion: kupenstack.io/v1alpha1\nkind: Network\nspec: {}\n' }, errors: ['schema.required a.yaml:1:1'] },
  { name: 'missing name', files: { 'a.yaml': 'apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  namespace: team-a\nspec: {}\n' }, errors: ['schema.required a.yaml:3:1'] },
  { name: 'name that is not a DNS name', files: { 'a.yaml': `${head('Network', 'App_Net')}  mtu: 1400\n` }, errors: ['name.invalid a.yaml:4:9'] },
  { name: 'namespace that is not a DNS label', files: { 'a.yaml': `${head('Network', 'n1', 'team.a')}  mtu: 1400\n` }, errors: ['namespace.invalid a.yaml:5:14'] },
  { name: 'namespaced kind without namespace', files: { 'a.yaml': 'apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: n1\nspec: {}\n' }, errors: ['namespace.missing a.yaml:3:1'] },
  { name: 'cluster-scoped kind with a namespace', files: { 'a.yaml': 'apiVersion: kupenstack.io/v1alpha1\nkind: OpenStackCloud\nmetadata:\n  name: cloud\n  namespace: team-a\nspec:\n  release: "2024.1"\n' }, errors: ['namespace.forbidden a.yaml:5:3'] },

  // --- schema
  { name: 'unknown field in spec, with a suggestion', files: { 'a.yaml': subnet('  cidrr: 10.0.1.0/24\n') }, errors: ['schema.any-of a.yaml:6:1', 'schema.unknown-field a.yaml:8:3'] },
  { name: 'unknown top-level field', files: { 'a.yaml': `${head('Network', 'n1')}  mtu: 1400\nstatus: {}\nextra: true\n` }, errors: ['schema.unknown-field a.yaml:9:1'] },
  { name: 'wrong type: MTU as a string', files: { 'a.yaml': `${head('Network', 'n1')}  mtu: "1400"\n` }, errors: ['schema.type a.yaml:7:8'] },
  { name: 'enum: unknown disk format', files: { 'a.yaml': `${head('Image', 'img')}  diskFormat: qcow3\n  source:\n    url: {url: "http://127.0.0.1/x.img"}\n` }, errors: ['schema.enum a.yaml:7:15'] },
  { name: 'MTU above the Neutron maximum', files: { 'a.yaml': `${head('Network', 'n1')}  mtu: 65000\n` }, errors: ['schema.range a.yaml:7:8'] },
  { name: 'flavor with zero vCPUs', files: { 'a.yaml': `${head('Flavor', 'f0')}  vcpus: 0\n  ram: 512\n  disk: 1\n` }, errors: ['schema.range a.yaml:7:10'] },
  { name: 'subnet without cidr', files: { 'a.yaml': subnet('  gatewayIP: 10.0.1.1\n') }, errors: ['schema.any-of a.yaml:6:1'] },
  { name: 'CIDR with a /33 prefix', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/33\n') }, errors: ['schema.format a.yaml:8:9'] },
  { name: 'gateway that is not an IP address', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  gatewayIP: 10.0.1.300\n') }, errors: ['schema.format a.yaml:9:14'] },
  { name: 'VM with neither image nor boot volume', files: { 'a.yaml': vm('  flavorRef: {name: small}\n') }, errors: ['schema.one-of a.yaml:6:1'] },
  { name: 'Image with both a URL and an OCI source', files: { 'a.yaml': `${head('Image', 'img')}  diskFormat: raw\n  source:\n    url: {url: "http://127.0.0.1/x.img"}\n    oci: {repository: 127.0.0.1:5050/vm/x, tag: "1"}\n` }, errors: ['schema.one-of a.yaml:8:3'] },
  { name: 'VM with userData and userDataSecretRef', files: { 'a.yaml': vm('  flavorRef: {name: small}\n  imageRef: {name: cirros}\n  userData: "#!/bin/sh"\n  userDataSecretRef: {name: ud}\n') }, errors: ['schema.conflict a.yaml:6:1'] },
  { name: 'Image polled both by interval and by schedule', files: { 'a.yaml': `${head('Image', 'img')}  diskFormat: raw\n  interval: 10m\n  schedule: "*/5 * * * *"\n  source:\n    oci: {repository: 127.0.0.1:5050/vm/x, tag: "1"}\n` }, errors: ['schema.conflict a.yaml:6:1'] },

  // --- names and references
  { name: 'duplicate name in two files', files: { 'z.yaml': `${head('Network', 'app-net')}  mtu: 1400\n` }, errors: ['name.duplicate z.yaml:4:9'] },
  { name: 'duplicate name in one file', files: { 'a.yaml': `${head('Flavor', 'f1')}  vcpus: 1\n  ram: 512\n  disk: 1\n---\n${head('Flavor', 'f1')}  vcpus: 2\n  ram: 512\n  disk: 1\n` }, errors: ['name.duplicate a.yaml:14:9'] },
  { name: 'same name in two namespaces is fine, a missing reference is not', files: { 'a.yaml': `${head('Network', 'app-net', 'team-b')}  mtu: 1400\n---\n${head('Subnet', 'b-sub', 'team-b')}  networkRef: {name: app-nett}\n  cidr: 10.1.0.0/24\n` }, errors: ['ref.missing a.yaml:15:22'] },
  { name: 'reference to a manifest of another namespace', files: { 'a.yaml': `${head('Subnet', 'b-sub', 'team-b')}  networkRef: {name: app-net}\n  cidr: 10.1.0.0/24\n` }, errors: ['ref.cross-namespace a.yaml:7:22'] },
  { name: 'reference that names a namespace', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n').replace('networkRef: {name: app-net}', 'networkRef: {name: app-net, namespace: team-b}') }, errors: ['ref.cross-namespace a.yaml:7:31'] },
  { name: 'VM whose flavor, key pair and security group do not exist', files: { 'a.yaml': vm('  flavorRef: {name: large}\n  imageRef: {name: cirros}\n  keyPairRef: {name: bob}\n  securityGroupRefs: [{name: ssh}, {name: web}]\n') }, errors: ['ref.missing a.yaml:7:21', 'ref.missing a.yaml:9:22', 'ref.missing a.yaml:10:43'] },

  // --- network arithmetic
  { name: 'subnets of one network that overlap', files: { 'a.yaml': subnet('  cidr: 10.0.0.128/25\n') }, errors: ['subnet.overlap a.yaml:8:9'] },
  { name: 'gateway outside the CIDR', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  gatewayIP: 10.0.2.1\n') }, errors: ['subnet.gateway-outside a.yaml:9:14'] },
  { name: 'gateway on the broadcast address', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  gatewayIP: 10.0.1.255\n') }, errors: ['subnet.gateway-invalid a.yaml:9:14'] },
  { name: 'allocation pool outside the CIDR', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  allocationPools:\n    - {start: 10.0.1.10, end: 10.0.2.20}\n') }, errors: ['subnet.pool-outside a.yaml:10:31'] },
  { name: 'allocation pool that ends before it starts', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  allocationPools:\n    - {start: 10.0.1.200, end: 10.0.1.10}\n') }, errors: ['subnet.pool-invalid a.yaml:10:7'] },
  { name: 'allocation pool containing the gateway', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  gatewayIP: 10.0.1.1\n  allocationPools:\n    - {start: 10.0.1.1, end: 10.0.1.100}\n') }, errors: ['subnet.gateway-in-pool a.yaml:11:7'] },
  { name: 'allocation pools that overlap', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  allocationPools:\n    - {start: 10.0.1.10, end: 10.0.1.100}\n    - {start: 10.0.1.50, end: 10.0.1.150}\n') }, errors: ['subnet.pool-overlap a.yaml:11:7'] },
  { name: 'CIDR with host bits set', files: { 'a.yaml': subnet('  cidr: 10.0.1.7/24\n') }, errors: ['subnet.cidr-host-bits a.yaml:8:9'] },
  { name: 'IPv6 CIDR on an IPv4 subnet', files: { 'a.yaml': subnet('  cidr: fd00:1::/64\n') }, errors: ['subnet.ip-version a.yaml:8:9'] },
  { name: 'security-group port range reversed', files: { 'a.yaml': sgRule('{direction: ingress, protocol: tcp, portRangeMin: 443, portRangeMax: 80}') }, errors: ['securitygroup.port-range a.yaml:8:57'] },
  { name: 'security-group ports without a protocol', files: { 'a.yaml': sgRule('{direction: ingress, portRangeMin: 22, portRangeMax: 22}') }, errors: ['securitygroup.ports-without-protocol a.yaml:8:42'] },
  { name: 'ICMP type above 255', files: { 'a.yaml': sgRule('{direction: ingress, protocol: icmp, portRangeMin: 300}') }, errors: ['securitygroup.icmp-range a.yaml:8:58'] },
  { name: 'IPv6 prefix on an IPv4 rule', files: { 'a.yaml': sgRule('{direction: ingress, protocol: tcp, portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: "fd00::/8"}') }, errors: ['securitygroup.ethertype a.yaml:8:95'] },
  { name: 'application credential without a role', files: { 'a.yaml': `${head('ApplicationCredential', 'ccm')}  roles: []\n  secretRef: {name: ccm-cloud}\n` }, errors: ['schema.range a.yaml:7:10'] },
  { name: 'application credential rotated within its grace', files: { 'a.yaml': `${head('ApplicationCredential', 'ccm')}  roles: [member]\n  secretRef: {name: ccm-cloud}\n  rotateAfter: 5m\n` }, errors: ['appcred.rotate-within-grace a.yaml:9:16'] },
  {
    name: 'two application credentials writing one Secret',
    files: { 'a.yaml': `${head('ApplicationCredential', 'ccm')}  roles: [member]\n  secretRef: {name: cloud}\n---\n${head('ApplicationCredential', 'backup')}  roles: [reader]\n  secretRef: {name: cloud}\n` },
    errors: ['appcred.secret-shared a.yaml:17:21'],
  },
  {
    name: 'application credential access rule given twice',
    files: { 'a.yaml': `${head('ApplicationCredential', 'ccm')}  roles: [member]\n  secretRef: {name: ccm-cloud}\n  accessRules:\n    - {service: network, method: GET, path: /v2.0/ports}\n    - {service: network, method: GET, path: /v2.0/ports}\n` },
    errors: ['appcred.access-rule-twice a.yaml:11:7'],
  },
  {
    name: 'application credential access rule with a method HTTP lacks',
    files: { 'a.yaml': `${head('ApplicationCredential', 'ccm')}  roles: [member]\n  secretRef: {name: ccm-cloud}\n  accessRules:\n    - {service: network, method: FETCH, path: /v2.0/ports}\n` },
    errors: ['schema.enum a.yaml:10:34'],
  },
  {
    name: 'unrestricted application credential with access rules',
    files: { 'a.yaml': `${head('ApplicationCredential', 'ccm')}  roles: [member]\n  secretRef: {name: ccm-cloud}\n  unrestricted: true\n  accessRules:\n    - {service: network, method: GET, path: /v2.0/ports}\n` },
    errors: ['appcred.unrestricted-with-rules a.yaml:9:17'],
  },
  { name: 'server-group rules with a policy Nova takes none with', files: { 'a.yaml': `${head('ServerGroup', 'packed')}  policy: affinity\n  rules: {maxServerPerHost: 2}\n` }, errors: ['servergroup.rules-policy a.yaml:8:10'] },
  {
    name: 'volume from a snapshot and an image at once',
    files: { 'a.yaml': `${head('Volume', 'data')}  size: 2\n---\n${head('VolumeSnapshot', 'snap')}  volumeRef: {name: data}\n---\n${head('Volume', 'copy')}  size: 2\n  imageRef: {name: cirros}\n  source: {snapshotRef: {name: snap}}\n` },
    errors: ['volume.two-sources a.yaml:25:25'],
  },
  {
    name: 'volume from a snapshot smaller than the snapshot',
    files: { 'a.yaml': `${head('Volume', 'data')}  size: 4\n---\n${head('VolumeSnapshot', 'snap')}  volumeRef: {name: data}\n---\n${head('Volume', 'copy')}  size: 2\n  source: {snapshotRef: {name: snap}}\n` },
    errors: ['volume.smaller-than-snapshot a.yaml:23:9'],
  },
  { name: 'port address outside its subnet', files: { 'a.yaml': `${head('Port', 'p1')}  networkRef: {name: app-net}\n  fixedIPs:\n    - {subnetRef: {name: app-subnet}, ipAddress: 10.9.9.9}\n` }, errors: ['port.ip-outside a.yaml:9:50'] },

  { name: 'port address outside its subnet (IPv6 family check too)', files: { 'a.yaml': `${head('Port', 'p2')}  networkRef: {name: app-net}\n  fixedIPs:\n    - {subnetRef: {name: app-subnet}, ipAddress: "fd00::5"}\n` }, errors: ['port.ip-outside a.yaml:9:50'] },

  // --- contradictions
  { name: 'unmanaged without import', files: { 'a.yaml': `${head('Network', 'ext')}  managementPolicy: unmanaged\n` }, errors: ['import.required a.yaml:7:21'] },
  { name: 'gateway given while the gateway is disabled', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  disableGateway: true\n  gatewayIP: 10.0.1.1\n') }, errors: ['subnet.gateway-conflict a.yaml:10:14'] },
  { name: 'IPv6 address mode on an IPv4 subnet', files: { 'a.yaml': subnet('  cidr: 10.0.1.0/24\n  ipv6AddressMode: slaac\n') }, errors: ['subnet.ipv6-mode a.yaml:9:20'] },
  { name: 'fixed IP on a VM network attached by port', files: { 'a.yaml': `${head('Port', 'p1')}  networkRef: {name: app-net}\n---\n${vm('  flavorRef: {name: small}\n  imageRef: {name: cirros}\n  networks:\n    - {portRef: {name: p1}, fixedIP: 10.0.0.50}\n')}` }, errors: ['vm.port-fixed-ip a.yaml:18:38'] },
  // --- the cloud itself (OpenStackCloud)
  { name: 'cloud release KupenStack does not know', files: { 'cloud.yaml': cloud('  release: "2031.1"\n') }, errors: ['cloud.release-unknown cloud.yaml:5:12'] },
  { name: 'two clouds in one cluster', files: { 'cloud.yaml': `${cloud('  release: "2025.1"\n')}---\n${cloud('  release: "2025.1"\n', 'other')}` }, errors: ['cloud.one-per-cluster cloud.yaml:9:18'] },
  { name: 'cloud charts from a repository and a path at once', files: { 'cloud.yaml': cloud('  release: "2025.1"\n  chart:\n    repository: https://charts.example.com/osh\n    path: charts\n') }, errors: ['cloud.chart-source cloud.yaml:8:11'] },
  { name: 'nova enabled without neutron', files: { 'cloud.yaml': cloud('  release: "2025.1"\n  services:\n    neutron: {enabled: false}\n') }, errors: ['cloud.chart-needs cloud.yaml:5:12'] },
  { name: 'digest pin of a chart the cloud does not deploy', files: { 'cloud.yaml': cloud(`  release: "2025.1"\n  chart:\n    repository: https://charts.example.com/osh\n    digests:\n      heat: sha256:${'a'.repeat(64)}\n`) }, errors: ['cloud.digest-chart cloud.yaml:9:13'] },
  { name: 'maintenance window in a time zone that does not exist', files: { 'cloud.yaml': cloud('  release: "2025.1"\n  maintenanceWindow: {schedule: "0 2 * * 6", duration: 4h, timeZone: Mars/Olympus}\n') }, errors: ['cloud.time-zone cloud.yaml:6:70'] },
];
