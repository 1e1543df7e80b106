/** The plan as data (Terraform's split): what `apply` executes and what renderers show. */

export type Action = 'create' | 'update' | 'replace' | 'delete' | 'heal' | 'noop';

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
  reasons: string[];
  /** The OpenStack object acted on, when it exists. */
  id?: string;
  /** For `heal`: the step chosen by the manifest's heal policy. */
  heal?: { step: 'reboot' | 'rebuild' | 'recreate'; attempt: number; reason: string };
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

export interface Plan {
  revision: string;
  changes: Change[];
  drift: Drift[];
  held: Held[];
  warnings: string[];
}
