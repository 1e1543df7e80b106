/**
 * Why a change loses something a user may care about. Kinds declare these
 * (kinds/kit/adapter.ts `impact`) and plans carry them (plan/plan.ts); the type
 * lives here so that neither folder imports the other for it.
 */
export type DestructiveReason =
  | 'root-disk-lost' // a VM rebuilt or recreated: its root disk starts again from the image
  | 'fixed-ip-changes' // a port or VM replaced: its addresses change
  | 'data-volume-deleted' // a volume deleted or replaced: its data is gone
  | 'image-deleted' // a Glance image deleted: VMs and volumes can no longer be rebuilt from it
  | 'dependents-deleted' // deleting this takes other declared objects with it
  | 'object-deleted'; // anything else deleted
