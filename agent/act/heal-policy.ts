/** Kept for kinds/image-oci-poll.ts; the heal policy is the planner's (plan/heal-policy.ts). */
export { parseDuration } from '../plan/heal-policy.ts';
