import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { holderIdentity, LeaderElector } from './leases/leader.ts';
import { ShardSet } from './leases/shard-set.ts';

/** How `kupenstack controller` was told to share the work between replicas: one Lease (--leader-elect), a Lease per shard (--shards), or neither. */
export interface LeadershipSettings {
  kc: KubeConfig;
  /** The controller's own namespace, where the Leases are. */
  namespace: string;
  leaderElect: boolean;
  leaderElectionId: string;
  timings: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  shards?: string[];
  preferred?: string;
  defaultShard: string;
  shardGraceMs?: number;
  metrics: AgentMetrics;
  log: (line: string) => void;
}

/** What gaining or losing a Lease starts and stops; `shard` is undefined for the one Lease of --leader-elect. */
export interface LeadershipHooks {
  gained(shard?: string): void;
  lost(shard?: string): void;
}

/** The Leases this replica competes for, and whether it may act on what the default shard (or the one Lease) owns: Syncs and the cloud. */
export interface Leadership {
  elector?: LeaderElector;
  shardSet?: ShardSet;
  acting: () => boolean;
}

/** The electors, made but not started: the loops they start and stop are made after them, with `acting` from here. */
export function leadershipOf(s: LeadershipSettings, on: LeadershipHooks): Leadership {
  const { shards, preferred, timings, log } = s;
  let shardSet: ShardSet | undefined;
  let elector: LeaderElector | undefined;
  if (shards) {
    shardSet = new ShardSet({
      coordination: s.kc.makeApiClient(CoordinationV1Api),
      namespace: s.namespace,
      leasePrefix: s.leaderElectionId,
      shards,
      preferred,
      identity: holderIdentity(),
      ...timings,
      graceMs: s.shardGraceMs ?? timings.leaseDurationMs,
      log,
      onGained: (shard) => on.gained(shard),
      onLost: (shard) => on.lost(shard),
      onChange: (held) => {
        log(
          `shards  held by ${shardSet?.identity ?? 'this replica'}: ${held.length ? held.join(', ') : 'none'} (of ${shards.join(', ')}${preferred ? `; prefers ${preferred}` : ''})`,
        );
      },
    });
    s.metrics.shards = shardSet;
  }
  if (s.leaderElect) {
    elector = new LeaderElector({
      coordination: s.kc.makeApiClient(CoordinationV1Api),
      namespace: s.namespace,
      name: s.leaderElectionId,
      identity: holderIdentity(),
      ...timings,
      log,
      onStartedLeading: () => on.gained(),
      onStoppedLeading: () => on.lost(),
    });
  }
  const acting = (): boolean => (shardSet ? shardSet.holds(s.defaultShard) : !elector || elector.isLeader());
  return { ...(elector ? { elector } : {}), ...(shardSet ? { shardSet } : {}), acting };
}
