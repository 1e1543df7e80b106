import type { KindAdapter } from './kit/adapter.ts';
import { applicationCredential } from './applicationcredential/adapter.ts';
import { network } from './network/adapter.ts';
import { floatingIp } from './floatingip/adapter.ts';
import { port } from './port/adapter.ts';
import { router } from './router/adapter.ts';
import { securityGroup } from './securitygroup/adapter.ts';
import { serverGroup } from './servergroup/adapter.ts';
import { subnet } from './subnet/adapter.ts';
import { flavor } from './flavor/adapter.ts';
import { image } from './image/adapter.ts';
import { keyPair } from './keypair/adapter.ts';
import { loadBalancer } from './loadbalancer/adapter.ts';
import { projectQuota } from './projectquota/adapter.ts';
import { volume } from './volume/adapter.ts';
import { volumeSnapshot } from './volumesnapshot/adapter.ts';
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
