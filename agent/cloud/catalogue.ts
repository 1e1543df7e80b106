/**
 * The charts an OpenStackCloud can deploy: which are infrastructure, which are on by
 * default, the OpenStack service type each provides (Keystone's catalog name, OSH's
 * endpoints.<type>) and the charts each needs at install time. The needs mirror the
 * real charts' dependencies.static (osh-lifecycle.md §1.2), including the nova ↔ neutron
 * cycle; install groups are derived from them (groups.ts).
 */
export interface ChartInfo {
  chart: string;
  infrastructure: boolean;
  enabledByDefault: boolean;
  /** Keystone service type (identity, image…), absent for infrastructure. */
  serviceType?: string;
  /** Charts that must run before (or with) this one. */
  needs: readonly string[];
}

const svc = (chart: string, serviceType: string, needs: string[], enabledByDefault = false): ChartInfo => ({
  chart,
  infrastructure: false,
  enabledByDefault,
  serviceType,
  needs,
});
const infra = (chart: string, enabledByDefault: boolean, needs: string[] = []): ChartInfo => ({ chart, infrastructure: true, enabledByDefault, needs });

export const CHARTS: readonly ChartInfo[] = [
  infra('mariadb', true),
  infra('rabbitmq', true),
  infra('memcached', true),
  infra('libvirt', false),
  infra('openvswitch', false),
  infra('ovn', false, ['openvswitch']),
  svc('keystone', 'identity', ['mariadb', 'memcached'], true),
  svc('glance', 'image', ['keystone', 'mariadb', 'rabbitmq'], true),
  svc('placement', 'placement', ['keystone', 'mariadb'], true),
  svc('cinder', 'volumev3', ['keystone', 'mariadb', 'rabbitmq'], true),
  svc('horizon', 'dashboard', ['keystone', 'mariadb', 'memcached'], true),
  // nova-compute waits on network:internal, neutron's agents on compute:internal.
  svc('nova', 'compute', ['keystone', 'mariadb', 'rabbitmq', 'glance', 'placement', 'neutron'], true),
  svc('neutron', 'network', ['keystone', 'mariadb', 'rabbitmq', 'memcached', 'nova'], true),
  svc('heat', 'orchestration', ['keystone', 'mariadb', 'rabbitmq']),
  svc('octavia', 'load-balancer', ['keystone', 'mariadb', 'rabbitmq', 'neutron', 'nova']),
  svc('barbican', 'key-manager', ['keystone', 'mariadb', 'rabbitmq']),
  svc('designate', 'dns', ['keystone', 'mariadb', 'rabbitmq']),
  svc('ironic', 'baremetal', ['keystone', 'mariadb', 'rabbitmq', 'neutron', 'glance']),
  svc('manila', 'sharev2', ['keystone', 'mariadb', 'rabbitmq']),
  svc('magnum', 'container-infra', ['keystone', 'mariadb', 'rabbitmq', 'heat']),
  svc('masakari', 'instance-ha', ['keystone', 'mariadb', 'rabbitmq', 'nova']),
];

export const chartInfo = (chart: string): ChartInfo | undefined => CHARTS.find((c) => c.chart === chart);

/**
 * Upgrade order of a release change (Rockoon's OPENSTACK_SERVICES_UPGRADE_ORDER, by service
 * type), infrastructure first. Charts not listed come after, in catalogue order.
 */
export const UPGRADE_ORDER: readonly string[] = [
  'identity',
  'placement',
  'image',
  'network',
  'compute',
  'volumev3',
  'load-balancer',
  'dns',
  'key-manager',
  'orchestration',
  'dashboard',
];
