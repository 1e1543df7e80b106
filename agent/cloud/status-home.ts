import type { OpenStackCloudStatus } from '../model/kinds.generated.ts';
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

/**
 * The home a pass works with and the status it starts from. Given a home (the controller's CR),
 * a status the cloud's ConfigMap still holds was written there by an earlier KupenStack, which
 * kept it in both places and resumed from the ConfigMap, or by a standalone run before the
 * controller took the cloud over: either way the newest, so it is saved to the home and only
 * then removed from the ConfigMap (a failed save leaves it there to be moved by the next pass).
 */
export async function homeOf(store: CloudStore, kept: CloudState, given: CloudStatusHome | undefined, log: (line: string) => void): Promise<{ home: CloudStatusHome; status: OpenStackCloudStatus }> {
  if (!given) return { home: configMapHome(store, kept), status: kept.status };
  if (Object.keys(kept.status).length === 0) return { home: given, status: given.status };
  await given.save({ status: kept.status });
  await store.save({ status: null });
  log(`cloud ${store.cloud}: status moved from ConfigMap ${store.namespace}/${store.stateName} to the OpenStackCloud's status`);
  return { home: given, status: kept.status };
}
