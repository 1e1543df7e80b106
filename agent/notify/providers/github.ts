import { commitStatus } from './commit-status.ts';
import type { Provider } from './request.ts';
import { apiUrl, json } from './request.ts';

/** GitHub's states (docs.github.com/en/rest/commits/statuses#create-a-commit-status): held waits for a person, so pending. */
const states = { started: 'pending', held: 'pending', applied: 'success', rejected: 'failure', failed: 'failure' } as const;

/** POST /repos/{owner}/{repo}/statuses/{sha} with a Bearer token. */
export const github: Provider = (n, t) => {
  const s = commitStatus(n);
  if (!s || !t.repository) return undefined;
  const headers: Record<string, string> = { ...json, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
  if (t.secret !== undefined) headers.authorization = `Bearer ${t.secret}`;
  return {
    url: apiUrl(t.url, `/repos/${t.repository}/statuses/${s.sha}`),
    headers,
    body: JSON.stringify({ state: states[s.event], context: s.context, description: s.description }),
  };
};
