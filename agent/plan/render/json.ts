/**
 * The plan for machines: one JSON document, described by
 * schemas/plan.schema.json (a test validates the output against it). Values
 * are full, never truncated; absent values (`undefined`) are `null`, so every
 * key is always present.
 */
import type { CloudPlan } from '../../cloud/plan.ts';
import type { DestructiveReason } from '../../model/impact.ts';
import type { Action, Plan, PlanSummary } from '../plan.ts';
import { shownChanges } from './format.ts';

export interface JsonPlan {
  revision: string;
  against: string;
  summary: PlanSummary;
  changes: {
    address: string;
    action: Exclude<Action, 'noop'>;
    sharing?: 'share' | 'unshare';
    destructive: boolean;
    reasons: { code: DestructiveReason; message: string }[];
    fields: { path: string; before: unknown; after: unknown; forcesReplacement: boolean }[];
  }[];
  drift: { address: string; path: string; expected: unknown; actual: unknown; immutable: boolean }[];
  held: { address: string; action: 'delete'; reason: string }[];
  images: { address: string; reference: string; from: string | null; to: string }[];
  warnings: string[];
  /** Only with an OpenStackCloud in the revision. */
  cloud?: CloudPlan;
}

const orNull = (v: unknown): unknown => (v === undefined ? null : v);

/** The document as data, for callers that embed it (the agent's status) rather than print it. */
export function jsonPlan(plan: Plan): JsonPlan {
  return {
    revision: plan.revision,
    against: plan.against,
    summary: {
      create: plan.summary.create,
      update: plan.summary.update,
      replace: plan.summary.replace,
      delete: plan.summary.delete,
      destructive: plan.summary.destructive,
      ...(plan.summary.adopt ? { adopt: plan.summary.adopt } : {}),
    },
    // Keys are picked one by one: the document's shape is the schema's, not whatever the planner adds to a Change.
    changes: shownChanges(plan.changes).map((c) => ({
      address: c.address,
      action: c.action === 'noop' ? 'update' : c.action,
      ...(c.sharing ? { sharing: c.sharing } : {}),
      destructive: c.destructive,
      reasons: c.reasons.map((r) => ({ code: r.code, message: r.message })),
      fields: c.fields.map((f) => ({ path: f.path, before: orNull(f.before), after: orNull(f.after), forcesReplacement: f.forcesReplacement })),
    })),
    drift: plan.drift.map((d) => ({ address: d.address, path: d.path, expected: orNull(d.expected), actual: orNull(d.actual), immutable: d.immutable })),
    held: plan.held.map((h) => ({ address: h.address, action: h.action, reason: h.reason })),
    images: plan.images.map((i) => ({ address: i.address, reference: i.reference, from: i.from ?? null, to: i.to })),
    warnings: [...plan.warnings],
    ...(plan.cloud ? { cloud: cloudDocument(plan.cloud) } : {}),
  };
}

/** The cloud's part, its keys picked one by one as for the changes. */
function cloudDocument(p: CloudPlan): CloudPlan {
  return {
    cloud: p.cloud,
    ...(p.namespace ? { namespace: p.namespace } : {}),
    changes: p.changes.map((c) => ({
      chart: c.chart,
      kind: c.kind,
      name: c.name,
      action: c.action,
      ...(c.fields ? { fields: [...c.fields] } : {}),
      ...(c.images
        ? {
            images: c.images.map((i) => ({
              container: i.container,
              ...(i.from !== undefined ? { from: i.from } : {}),
              ...(i.to !== undefined ? { to: i.to } : {}),
            })),
          }
        : {}),
    })),
    steps: [...p.steps],
  };
}

/** Exactly one JSON document and a newline, like every `--output json` of the CLI. */
export function renderJson(plan: Plan): string {
  return `${JSON.stringify(jsonPlan(plan), null, 2)}\n`;
}
