import type { AgentConfig } from '../config/config.ts';
import type { ApplyReport } from '../act/reconcile.ts';
import type { EventSink } from '../events/events.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import type { ApiCounters } from '../openstack/counters.ts';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { StateStore } from '../status/store.ts';
import type { ValidatedRevision } from '../validate/validate.ts';

/*
 * The engine entry point as the common contract defines it (agent/act/apply.ts
 * on the house-engine branch: RevisionInput, EngineDeps, applyRevision). The
 * controller depends on this shape only; cli/controller.ts picks the
 * implementation. Until house-engine lands, engine-bridge.ts provides it over
 * today's reconcile(); afterwards `applyRevision` itself is passed in.
 */
export interface RevisionInput {
  revision: string;
  validated: ValidatedRevision;
}

export interface EngineDeps {
  cloud: OpenStackCloud;
  registry: SchemaRegistry;
  config: AgentConfig;
  state: StateStore;
  events: EventSink;
  secrets: SecretResolver;
  counters?: ApiCounters;
  signal?: AbortSignal;
  /** Only these namespaces' projects are observed, planned and pruned. */
  namespaces?: string[];
}

export interface EngineOptions {
  prune: boolean;
  allowMassDelete: boolean;
}

export type ApplyRevision = (input: RevisionInput, deps: EngineDeps, opts: EngineOptions) => Promise<ApplyReport>;
