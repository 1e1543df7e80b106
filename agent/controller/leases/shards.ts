import { UsageError } from '../../errors.ts';

/** The namespace label naming a namespace's shard; a namespace without it is in the default shard. */
const shardLabel = 'kupenstack.io/shard';

/** A shard name goes into a Lease name and a label value: a DNS label. */
const shardName = /^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/;

/** `--shards a,b,c`: the shards a replica serves, checked and deduplicated in order. */
export function parseShards(list: string, flag = '--shards'): string[] {
  const shards = [
    ...new Set(
      list
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  if (shards.length === 0) throw new UsageError(`${flag} ${JSON.stringify(list)}: name at least one shard, e.g. --shards a,b,c`);
  for (const s of shards) checkShardName(s, flag);
  return shards;
}

export function checkShardName(name: string, flag: string): void {
  if (!shardName.test(name))
    throw new UsageError(
      `${flag} ${name}: a shard name is 1–40 lower-case letters, digits or '-', starting and ending with a letter or digit (it becomes part of a Lease name)`,
    );
}

/** The shard of a namespace: its label, else the default shard. */
export function shardOf(labels: Record<string, string> | undefined, defaultShard: string): string {
  const value = labels?.[shardLabel];
  return value === undefined || value === '' ? defaultShard : value;
}

/** The Lease of a shard, in the controller's namespace. */
export function shardLeaseName(prefix: string, shard: string): string {
  return `${prefix}-shard-${shard}`;
}

/**
 * The shard a replica prefers: `--preferred-shard`, else the ordinal of a
 * StatefulSet pod (`<name>-<n>`) modulo the shards, so replicas 0, 1, 2 of
 * three shards prefer one each; else none (the replica contends for every
 * shard at once, as one Lease would).
 */
export function preferredShard(shards: string[], opts: { preferred?: string; podName?: string }): string | undefined {
  if (opts.preferred !== undefined) {
    if (!shards.includes(opts.preferred)) throw new UsageError(`--preferred-shard ${opts.preferred}: not one of --shards ${shards.join(',')}`);
    return opts.preferred;
  }
  const ordinal = /-(\d+)$/.exec(opts.podName ?? '')?.[1];
  return ordinal === undefined ? undefined : shards[Number(ordinal) % shards.length];
}

/**
 * Whether a replica may take a shard's Lease that is free, expired or not
 * created yet. Its preferred shard (or any, without a preference): always.
 * Another shard: only once the replica has run for the grace period, so at
 * a rollout each shard's preferred replica has had time to start and claim
 * it; after that, an expired Lease of a dead replica is taken over as usual.
 */
export function mayAcquire(shard: string, preferred: string | undefined, runningMs: number, graceMs: number): boolean {
  return preferred === undefined || shard === preferred || runningMs >= graceMs;
}
