import { commitStatus } from './commit-status.ts';
import type { Provider } from './request.ts';
import { apiUrl, json } from './request.ts';

/**
 * GitLab's states (docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit):
 * a status only moves forward (pending → running → success | failed), so a
 * held revision, applied but for its deletions, is `running`.
 */
const states = { started: 'pending', held: 'running', applied: 'success', rejected: 'failed', failed: 'failed' } as const;

/** POST /projects/{url-encoded path}/statuses/{sha} with a PRIVATE-TOKEN header. */
export const gitlab: Provider = (n, t) => {
  const s = commitStatus(n);
  if (!s || !t.repository) return undefined;
  const headers: Record<string, string> = { ...json };
  if (t.secret !== undefined) headers['private-token'] = t.secret;
  return {
    url: apiUrl(t.url, `/projects/${encodeURIComponent(t.repository)}/statuses/${s.sha}`),
    headers,
    body: JSON.stringify({ state: states[s.event], name: s.context, description: s.description }),
  };
};
