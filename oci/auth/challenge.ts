/**
 * `WWW-Authenticate` parsing (RFC 7235 auth-params, as registries send them:
 * `Bearer realm="https://…/token",service="registry",scope="repository:a:pull",error="insufficient_scope"`).
 */
export interface Challenge {
  /** Lower-case scheme: bearer, basic, … */
  scheme: string;
  params: Record<string, string>;
}

export function parseChallenges(header: string | null | undefined): Challenge[] {
  const out: Challenge[] = [];
  if (!header) return out;
  let i = 0;
  const s = header;
  const skipWs = (): void => {
    while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++;
  };
  const token = (): string => {
    const start = i;
    while (i < s.length && /[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(s[i]!)) i++;
    return s.slice(start, i);
  };
  let current: Challenge | undefined;
  while (i < s.length) {
    skipWs();
    if (s[i] === ',') {
      i++;
      continue;
    }
    const name = token();
    if (!name) {
      i++; // skip garbage
      continue;
    }
    skipWs();
    if (s[i] === '=' && current) {
      i++;
      skipWs();
      let value = '';
      if (s[i] === '"') {
        i++;
        while (i < s.length && s[i] !== '"') {
          if (s[i] === '\\' && i + 1 < s.length) i++;
          value += s[i];
          i++;
        }
        i++; // closing quote
      } else {
        value = token();
      }
      current.params[name.toLowerCase()] = value;
      continue;
    }
    // A bare token starts a new challenge (token68 forms are not used by registries).
    current = { scheme: name.toLowerCase(), params: {} };
    out.push(current);
  }
  return out;
}

/** Scopes named in a challenge (space-separated), e.g. `repository:vm/a:pull,push`. */
export function challengeScopes(challenge: Challenge): string[] {
  return (challenge.params.scope ?? '').split(' ').filter((x) => x.length > 0);
}

/** Merges scopes of the same resource: `repository:a:pull` + `repository:a:push` → `repository:a:pull,push`. */
export function mergeScopes(scopes: string[]): string[] {
  const byResource = new Map<string, Set<string>>();
  for (const scope of scopes) {
    const last = scope.lastIndexOf(':');
    if (last <= 0) continue;
    const resource = scope.slice(0, last);
    const actions = byResource.get(resource) ?? new Set<string>();
    for (const a of scope.slice(last + 1).split(',')) if (a) actions.add(a);
    byResource.set(resource, actions);
  }
  return [...byResource.entries()].map(([r, a]) => `${r}:${[...a].sort().join(',')}`).sort();
}

/** True when `have` grants everything `want` asks for. */
export function scopesCover(have: string[], want: string[]): boolean {
  const merged = new Map(mergeScopes(have).map((s) => [s.slice(0, s.lastIndexOf(':')), new Set(s.slice(s.lastIndexOf(':') + 1).split(','))]));
  for (const scope of mergeScopes(want)) {
    const last = scope.lastIndexOf(':');
    const granted = merged.get(scope.slice(0, last));
    if (!granted) return false;
    for (const a of scope.slice(last + 1).split(',')) if (!granted.has(a) && !granted.has('*')) return false;
  }
  return true;
}
