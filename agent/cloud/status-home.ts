import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { isKubeStatus, kubeApiError } from '../kube/errors.ts';
import type { OpenStackCloud, OpenStackCloudStatus } from '../model/kinds.generated.ts';
import type { CloudState, CloudStore } from './store.ts';

/**
 * Where a cloud's status lives: one home, chosen by the front end. The in-cluster controller
 * keeps it on the OpenStackCloud's status subresource, where an operator reads every kind's
 * status (`kubectl get kscloud -o yaml`) and where its Events point. A standalone run has no
 * custom resource: it keeps the status in the cloud's ConfigMap beside the inventory, in the
 * cluster the cloud runs in, so the next run finds it whichever machine starts it (a CI runner
 * has no state folder of its own to keep) and the controller can take the cloud over. What an
 * interrupted rollout resumes from (the backup taken, the chart reached) is in that status, and
 * each save is awaited before the step it records starts.
 */
export interface CloudStatusHome {
  /** The status as this home held it when the pass started. */
  readonly status: OpenStackCloudStatus;
  /** Keeps the status; throws when it could not (a run must not start a step it cannot record). */
  save(state: { status: OpenStackCloudStatus }): Promise<void>;
}

/** Standalone: the status in the cloud's ConfigMap, as the pass read it with the inventory. */
export function configMapHome(store: CloudStore, kept: CloudState): CloudStatusHome {
  return { status: kept.status, save: ({ status }) => store.save({ status }) };
}

export interface HomeOptions {
  /** The status's home when it is not the ConfigMap (the in-cluster controller's CR). */
  home?: CloudStatusHome;
  kubeConfig: KubeConfig;
  log: (line: string) => void;
}

/**
 * The home a pass works with and the status it starts from. Standalone, the ConfigMap's status, or
 * when it holds none the one on the OpenStackCloud resource (below). Given a home (the controller's CR),
 * a status the cloud's ConfigMap still holds was written there by an earlier KupenStack, which
 * kept it in both places and resumed from the ConfigMap, or by a standalone run before the
 * controller took the cloud over: either way the newest, so it is saved to the home and only
 * then removed from the ConfigMap (a failed save leaves it there to be moved by the next pass).
 */
export async function homeOf(store: CloudStore, kept: CloudState, opts: HomeOptions): Promise<{ home: CloudStatusHome; status: OpenStackCloudStatus }> {
  const { home: given, log } = opts;
  const empty = Object.keys(kept.status).length === 0;
  if (!given) {
    const home = configMapHome(store, kept);
    if (!empty) return { home, status: kept.status };
    const taken = await statusOnTheResource(opts.kubeConfig, store.cloud);
    const where = `ConfigMap ${store.namespace}/${store.stateName}`;
    if (taken.release !== undefined)
      log(`cloud ${store.cloud}: status read from the OpenStackCloud in the cluster (the controller drove it); kept in ${where} from now on`);
    return { home, status: taken };
  }
  if (empty) return { home: given, status: given.status };
  await given.save({ status: kept.status });
  await store.save({ status: null });
  log(`cloud ${store.cloud}: status moved from ConfigMap ${store.namespace}/${store.stateName} to the OpenStackCloud's status`);
  return { home: given, status: kept.status };
}

/**
 * Standalone, with no status in the ConfigMap: a cloud the in-cluster controller drove keeps its status on its
 * OpenStackCloud resource (the controller moved it there). Read from there once, so `apply --kubeconfig` taking a
 * cloud over from the controller does not take a deployed release for a first install (no backup, every chart at
 * once); the ConfigMap keeps it from then on. No such resource, or no right to read it: none.
 */
async function statusOnTheResource(kubeConfig: KubeConfig, name: string): Promise<OpenStackCloudStatus> {
  // The kind's group, version and plural (schemas/openstackcloud.schema.json): cloud/ sits below schema/.
  const at = { group: 'kupenstack.io', version: 'v1alpha1', plural: 'openstackclouds', name };
  try {
    const cr = (await kubeConfig.makeApiClient(CustomObjectsApi).getClusterCustomObject(at)) as Partial<OpenStackCloud>;
    return cr.status ?? {};
  } catch (err) {
    if (isKubeStatus(err, 404) || isKubeStatus(err, 403)) return {};
    throw kubeApiError(`read OpenStackCloud ${name}`, err);
  }
}
