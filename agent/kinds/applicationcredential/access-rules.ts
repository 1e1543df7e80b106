/** One Keystone access rule as the manifest writes it (spec.accessRules[]) and as the plan compares it. */
export interface AccessRule {
  service: string;
  method: string;
  path: string;
}

/** What Keystone reports for a credential's rule (it adds an id per rule). */
interface RawAccessRule {
  service?: string;
  method?: string;
  path?: string;
}

/**
 * Rules in one order, without Keystone's ids: the manifest's order means
 * nothing to Keystone, so a reordering is not a rotation.
 */
export function normaliseRules(rules: readonly RawAccessRule[] | null | undefined): AccessRule[] {
  return (rules ?? [])
    .map((r) => ({ service: r.service ?? '', method: r.method ?? '', path: r.path ?? '' }))
    .sort((a, b) => ruleKey(a).localeCompare(ruleKey(b)));
}

export function ruleKey(r: AccessRule): string {
  return `${r.service} ${r.method} ${r.path}`;
}

/** The create body's `access_rules`: absent when the manifest sets none (Keystone's "every API the roles allow"). */
export function accessRulesBody(rules: readonly AccessRule[]): { access_rules?: AccessRule[] } {
  return rules.length ? { access_rules: rules.map((r) => ({ service: r.service, method: r.method, path: r.path })) } : {};
}
