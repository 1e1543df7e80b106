import type * as k8s from '@kubernetes/client-node';
import type { ApplyRevision } from '../act/partial.ts';
import type { AgentConfig } from '../config/config.ts';
import type { EngineEvent, EventSink } from '../events/events.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { CreateJournal } from '../status/create-journal.ts';
import type { MemberPolicyOptions } from '../policy/member-policy.ts';
import type { KubeCalls } from './call-counts.ts';
import type { DigestGate } from '../kinds/kit/image-memory.ts';

/** How the resource loop (controller.ts) and one namespace's run (namespace-run.ts) are set up. */
export interface ControllerOptions {
  kc: k8s.KubeConfig;
  registry: SchemaRegistry;
  config: AgentConfig;
  /** The OpenStack client for a run; re-read when the cloud's Secret changes. */
  cloud: () => Promise<OpenStackCloud>;
  /**
   * The clouds of OpenStackCloudConnections (controller/clouds/connections.ts): a namespace labelled
   * kupenstack.io/cloud=<name> runs against that connection's client; without the label, `cloud`.
   * Throws CloudUnreachableError, without a call, while that cloud is down.
   */
  connections?: { cloudOf(name: string): Promise<OpenStackCloud> };
  secrets: SecretResolver;
  /** The ImageRollouts' gate (controller/rollouts/): which digest a governed Image may use now. */
  imageGate?: DigestGate;
  /** The engine entry point (agent/act/apply.ts applyRevision); injected so the loop does not care how a namespace is applied. */
  engine: ApplyRevision;
  /** The label by which a namespace opts in (default `kupenstack.io/project=enabled`). */
  optInLabel?: { key: string; value: string };
  /** Namespaces reconciled whatever their labels; a namespace labelled `kupenstack.io/project=enabled` opts in too. */
  allowNamespaces?: string[];
  /** Drift correction and self-heal: every opted-in namespace is reconciled this often even without a change. */
  resyncMs: number;
  debounceMs: number;
  /** Namespaces run at once (default: the config's concurrency, at most 4). A namespace whose objects OpenStack still works on frees its slot (progress by requeue). */
  namespaceWorkers?: number;
  /** A namespace's run is abandoned at a safe point after `ms` (--run-deadline), so no namespace holds a worker; `error` says so (Stalled, retried with backoff). */
  runDeadline?: { ms: number; error: (namespace: string) => Error };
  log: (line: string) => void;
  /** Extra subscribers to engine events (metrics, tests). */
  events?: EventSink;
  /**
   * Engine events about an object a Sync applied, with that Sync's name (the object's label kupenstack.io/sync,
   * which the Sync loop sets on everything in its inventory): its notify targets hear of drift, heals, new image versions.
   */
  syncEvents?: (sync: string, event: EngineEvent) => void;
  /** With several replicas: only the Lease holder acts; asked before each batch of writes (agent/controller/leases/leader.ts). */
  leader?: { isLeader(): boolean };
  /**
   * Sharding (agent/controller/leases/shard-set.ts): this replica acts on a namespace
   * only while it holds the Lease of the namespace's shard (label
   * kupenstack.io/shard, else defaultShard). A namespace relabelled into a
   * shard held here waits handoverMs before its first run, the time the old
   * shard's holder has to see the change and stop its run (see onNamespace).
   */
  sharding?: { defaultShard: string; holds(shard: string): boolean; handoverMs: number };
  /** Requests made to the API server (countKubeCalls on `kc`): logged after each run with the OpenStack calls, so an operator or a benchmark sees what a resync costs. */
  kubeCalls?: KubeCalls;
  /** OpenStack's admin-only fields in tenant namespaces (agent/policy/member-policy.ts): the cluster admin's allow-lists. */
  memberPolicy?: MemberPolicyOptions;
  /** Where creates in flight are recorded (controller/resources/create-journal.ts): a run after a kill -9 or a Lease handover waits for what the dead process sent. */
  journal?: CreateJournal;
}
