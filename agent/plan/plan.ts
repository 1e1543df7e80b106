/** The plan as data (Terraform's split): what `apply` executes and what the renderers show. */
import type { CloudPlan } from '../cloud/plan.ts';
import type { DestructiveReason } from '../model/impact.ts';

/** `adopt`: an existing object taken over (`import.adopt`); only its ownership marker is written. */
export type Action = 'create' | 'update' | 'replace' | 'delete' | 'heal' | 'adopt' | 'noop';

export interface FieldDiff {
  path: string;
  before: unknown;
  after: unknown;
  forcesReplacement: boolean;
}

export interface Change {
  /** `namespace/Kind/name`. */
  address: string;
  kind: string;
  namespace: string;
  name: string;
  action: Action;
  fields: FieldDiff[];
  destructive: boolean;
  reasons: { code: DestructiveReason; message: string }[];
  /** The OpenStack object acted on, when it exists. */
  id?: string;
  /** For `heal`: the step chosen by the manifest's heal policy. */
  heal?: { step: 'reboot' | 'rebuild' | 'recreate'; attempt: number; reason: string };
  /** A create that only makes the project a member of an image other projects may share, a delete that only takes it off (the last one out deletes it). */
  sharing?: 'share' | 'unshare';
  /** Human hint for an update that is more than a field write (a resize, a rebuild). */
  note?: string;
  /**
   * Replace cascade: the replaced objects (addresses) this object uses and is
   * detached from before they are deleted; its update then attaches the new ones.
   */
  detachFrom?: string[];
}

export interface Drift {
  address: string;
  path: string;
  expected: unknown;
  actual: unknown;
  /** Immutable drift is reported and left alone; mutable drift is corrected by an update. */
  immutable: boolean;
}

export interface Held {
  address: string;
  action: 'delete';
  reason: string;
}

/** An OCI tag that now resolves to another digest than the image in use (the ⟳ line). */
export interface ImageResolution {
  address: string;
  reference: string;
  from?: string;
  to: string;
}

export interface PlanSummary {
  create: number;
  update: number;
  replace: number;
  delete: number;
  destructive: number;
  /** Objects taken over (only their marker is written); absent when none, so plans without adoption read as before. */
  adopt?: number;
}

export interface Plan {
  revision: string;
  /** The revision this plan was compared with: a Git ref for `plan --base`, or the live cloud. */
  against: string;
  summary: PlanSummary;
  changes: Change[];
  drift: Drift[];
  held: Held[];
  images: ImageResolution[];
  warnings: string[];
  /** Resources that could not be planned (their errors are reported beside the plan): "no changes" would not be true. */
  incomplete?: number;
  /** The revision's OpenStackCloud: the Kubernetes objects its charts would change, and the steps in order. */
  cloud?: CloudPlan;
}

export function summarize(changes: Change[]): PlanSummary {
  const count = (a: Action) => changes.filter((c) => c.action === a).length;
  const adopt = count('adopt');
  return {
    create: count('create'),
    update: count('update') + count('heal'),
    replace: count('replace'),
    delete: count('delete'),
    destructive: changes.filter((c) => c.destructive).length,
    ...(adopt > 0 ? { adopt } : {}),
  };
}
