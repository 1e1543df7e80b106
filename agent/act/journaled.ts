import type { AdapterContext } from '../kinds/kit/adapter.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { CreateJournal } from '../status/create-journal.ts';
import { answerLost } from './lost-create.ts';

/**
 * A create recorded in the journal while it is in flight (status/create-journal.ts). `create` gets the cloud to
 * send it with: `cloud` gated by the record (OpenStackCloud.gated), so the record is written just before the
 * first write request leaves, after whatever `cloud` already waits for (the controller's finalizers), not when
 * the create starts waiting for a slot or a token: a kill before that leaves nothing for the next run to wait for.
 * Ended once the service answered; kept until its deadline (the request's timeout, asked for only then)
 * when the answer was lost (the service may still make it).
 */
export async function journaled<T>(
  journal: CreateJournal | undefined,
  cloud: OpenStackCloud,
  addresses: readonly string[],
  timeoutMs: () => number,
  create: (cloud: OpenStackCloud) => Promise<T>,
): Promise<T> {
  if (!journal) return create(cloud);
  let entry: Promise<string> | undefined;
  const record = async (): Promise<undefined> => {
    entry ??= journal.begin(addresses, Date.now() + timeoutMs());
    await entry;
    return undefined;
  };
  let answered = true;
  try {
    return await create(cloud.gated(record));
  } catch (err) {
    answered = !(err instanceof OpenStackError && answerLost(err));
    throw err;
  } finally {
    if (answered && entry) await journal.end(await entry);
  }
}

/** The adapter context of a journaled create: the same, over the cloud `journaled` sends it with. */
export async function sentWith(ctx: AdapterContext, cloud: OpenStackCloud): Promise<AdapterContext> {
  if (cloud === ctx.cloud) return ctx;
  return { ...ctx, cloud, apis: await cloud.forProject(ctx.apis.projectId) };
}
