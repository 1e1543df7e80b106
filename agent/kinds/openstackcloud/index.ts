/**
 * The OpenStackCloud kind's one face: only its validation rules live here
 * (its lifecycle is cloud/, driven by the front ends, not an adapter).
 */
export { openStackCloudRules } from './rules.ts';
