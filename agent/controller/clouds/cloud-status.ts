import type { StepFailure } from '../../cloud/apply.ts';
import type { OpenStackCloudStatus } from '../../model/kinds.generated.ts';
import type { ServiceEndpoint } from './cloud-endpoints.ts';

/** What the status subresource of an OpenStackCloud says beyond the status driveCloud saves there. */
export interface CloudStatusExtras {
  /** metadata.generation of the spec this run drives. */
  generation?: number;
  /** The object the run stopped at. */
  failure?: StepFailure;
  /** Outside the maintenance window: when the next one opens. */
  waitUntil?: Date;
  /** Per chart, its endpoint in the Keystone catalog. */
  endpoints?: Record<string, ServiceEndpoint>;
  /**
   * A write while the run goes on, over this earlier status: only Reconciling speaks for the
   * new generation yet; observedGeneration and the other conditions keep the generation they
   * were computed for, so "Ready at generation N" never means a run still under way.
   */
  progressOver?: OpenStackCloudStatus;
}

const cap = 4096;

/**
 * The CR's status: driveCloud's status (release, conditions, per-service readiness,
 * upgrade progress, last backup) with the generation it was computed for on every
 * condition, the failing object, the next window and each service's endpoint. Written
 * whole by server-side apply, so a field this run no longer sets (a cleared failure) goes.
 */
export function cloudStatusBody(stored: OpenStackCloudStatus, extras: CloudStatusExtras): OpenStackCloudStatus {
  const { generation, failure, waitUntil, endpoints, progressOver } = extras;
  const status: OpenStackCloudStatus = { ...stored };
  if (progressOver) {
    status.observedGeneration = progressOver.observedGeneration;
    const was = new Map((progressOver.conditions ?? []).map((c) => [c.type, c.observedGeneration]));
    status.conditions = stored.conditions?.map(({ observedGeneration: _, ...c }) => {
      const at = c.type === 'Reconciling' ? generation : was.get(c.type);
      return at === undefined ? c : { ...c, observedGeneration: at };
    });
  } else if (generation !== undefined) {
    status.observedGeneration = generation;
    status.conditions = stored.conditions?.map((c) => ({ ...c, observedGeneration: generation }));
  }
  if (stored.services) {
    status.services = Object.fromEntries(
      Object.entries(stored.services).map(([chart, s]) => [
        chart,
        { ...s, ...(s.message ? { message: s.message.slice(0, cap) } : {}), ...(endpoints?.[chart] ? { endpoint: endpoints[chart] } : {}) },
      ]),
    );
  }
  delete status.failure;
  if (failure) {
    status.failure = {
      step: failure.step,
      kind: failure.kind,
      name: failure.name,
      reason: failure.reason.slice(0, cap),
      ...(failure.exitCode !== undefined ? { exitCode: failure.exitCode } : {}),
      ...(failure.pod ? { pod: failure.pod } : {}),
      // The end of a log is what explains a failure.
      ...(failure.logTail ? { logTail: failure.logTail.slice(-cap) } : {}),
    };
  }
  delete status.nextWindow;
  if (waitUntil) status.nextWindow = waitUntil.toISOString();
  return status;
}
