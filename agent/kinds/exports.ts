import type { KindExport } from './export.ts';
import { networkExport } from './network.export.ts';
import { portExport } from './port.export.ts';
import { routerExport } from './router.export.ts';
import { securityGroupExport } from './securitygroup.export.ts';
import { subnetExport } from './subnet.export.ts';

/** The kinds `kupenstack export` writes today, in the order a person reads them. */
export const kindExports: readonly KindExport[] = [networkExport, subnetExport, securityGroupExport, portExport, routerExport];
