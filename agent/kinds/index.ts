import type { KindAdapter } from './adapter.ts';
import { applicationCredential } from './applicationcredential/adapter.ts';
import { network } from './network.ts';
import { floatingIp } from './floatingip.ts';
import { port } from './port.ts';
import { router } from './router.ts';
import { securityGroup } from './securitygroup.ts';
import { serverGroup } from './servergroup.ts';
import { subnet } from './subnet.ts';
import { flavor } from './flavor.ts';
import { image } from './image/adapter.ts';
import { keyPair } from './keypair.ts';
import { loadBalancer } from './loadbalancer/adapter.ts';
import { projectQuota } from './projectquota.ts';
import { volume } from './volume.ts';
import { volumeSnapshot } from './volumesnapshot.ts';
import { virtualMachine } from './virtualmachine/adapter.ts';

/** One adapter per kind that lives in OpenStack. */
export const adapters: ReadonlyMap<string, KindAdapter> = new Map(
  [
    network,
    subnet,
    securityGroup,
    router,
    port,
    floatingIp,
    flavor,
    keyPair,
    serverGroup,
    image,
    volume,
    volumeSnapshot,
    projectQuota,
    applicationCredential,
    virtualMachine,
    loadBalancer,
  ].map((a) => [a.kind, a]),
);
