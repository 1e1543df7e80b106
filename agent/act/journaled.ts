import { beforeWrite } from '../openstack/before-write.ts';
import { OpenStackError } from '../openstack/errors.ts';
import type { CreateJournal } from '../status/create-journal.ts';
import { answerLost } from './lost-create.ts';

/**
 * A create recorded in the journal while it is in flight (status/create-journal.ts). The record is
 * written just before the first write request leaves (openstack/before-write.ts), not when the create
 * starts waiting for a slot or a token: a kill before that leaves nothing for the next run to wait for.
 * Ended once the service answered; kept until its deadline (the request's timeout, asked for only then)
 * when the answer was lost (the service may still make it).
 */
export async function journaled<T>(journal: CreateJournal | undefined, addresses: readonly string[], timeoutMs: () => number, create: () => Promise<T>): Promise<T> {
  if (!journal) return create();
  let entry: Promise<string> | undefined;
  // What the caller must have done before any write (the controller's finalizers) comes first.
  const outer = beforeWrite.getStore();
  const record = async (): Promise<void> => {
    await outer?.();
    entry ??= journal.begin(addresses, Date.now() + timeoutMs());
    await entry;
  };
  let answered = true;
  try {
    return await beforeWrite.run(record, create);
  } catch (err) {
    answered = !(err instanceof OpenStackError && answerLost(err));
    throw err;
  } finally {
    if (answered && entry) await journal.end(await entry);
  }
}
