import type { OpenStackCloudConnectionSpec } from '../../model/kinds.generated.ts';

/** Where a connection's clouds.yaml is: one Secret key, the entry in it, and the region the connection asks for. */
export interface ConnectionSource {
  secret: { namespace: string; name: string; key: string };
  cloud: string;
  region?: string;
}

/** What an OpenStackCloud's install wrote (its status.cloudsSecret), once its Keystone is bootstrapped. */
export interface InstalledCloudsSecret {
  namespace?: string;
  name?: string;
  key?: string;
  cloud?: string;
}

/**
 * The source of a connection's clouds.yaml: its secretRef and cloud, or the Secret an OpenStackCloud's
 * install wrote. A string says why there is none yet (the install has not written it): the connection
 * waits, Stalled with that reason. The schema's oneOf makes one of the two present.
 */
export function sourceOf(spec: OpenStackCloudConnectionSpec, installed: (name: string) => InstalledCloudsSecret | undefined): ConnectionSource | string {
  const region = spec.region !== undefined ? { region: spec.region } : {};
  if (spec.secretRef && spec.cloud !== undefined) {
    const { namespace, name, key } = spec.secretRef;
    return { secret: { namespace, name, key: key ?? 'clouds.yaml' }, cloud: spec.cloud, ...region };
  }
  const ref = spec.openStackCloudRef?.name;
  if (ref === undefined) return 'the spec names neither secretRef with cloud nor openStackCloudRef';
  const written = installed(ref);
  if (!written?.namespace || !written.name || !written.cloud)
    return `OpenStackCloud ${ref} has not written its clouds.yaml Secret yet (its status.cloudsSecret): its Keystone is not bootstrapped`;
  return { secret: { namespace: written.namespace, name: written.name, key: written.key ?? 'clouds.yaml' }, cloud: spec.cloud ?? written.cloud, ...region };
}
