import { commitStatus } from './commit-status.ts';
import type { Provider } from './request.ts';
import { apiUrl, json } from './request.ts';

/** Gitea's and Forgejo's CommitStatusState (pending, success, error, failure, warning); held waits for a person. */
const states = { started: 'pending', held: 'pending', applied: 'success', rejected: 'failure', failed: 'failure' } as const;

/** POST /repos/{owner}/{repo}/statuses/{sha} (Gitea API v1, the same on Forgejo) with `Authorization: token …`. */
export const gitea: Provider = (n, t) => {
  const s = commitStatus(n);
  if (!s || !t.repository) return undefined;
  const headers: Record<string, string> = { ...json };
  if (t.secret !== undefined) headers.authorization = `token ${t.secret}`;
  return {
    url: apiUrl(t.url, `/repos/${t.repository}/statuses/${s.sha}`),
    headers,
    body: JSON.stringify({ state: states[s.event], context: s.context, description: s.description }),
  };
};
