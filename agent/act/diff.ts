/** Kept for the kind tests' imports: the diff is the planner's (plan/diff.ts). */
export { difference, replaceHash, type Difference } from '../plan/diff.ts';
