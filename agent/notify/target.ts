import type { SecretKey } from '../secrets/resolver.ts';
import type { NoticeEvent } from './notice.ts';

export type ProviderName = 'webhook' | 'slack' | 'teams' | 'github' | 'gitlab' | 'gitea';

/** One entry of a Sync's `notify:` list, checked and with its secret named (never read until a send). */
export interface NotifyTarget {
  provider: ProviderName;
  /** The API base (commit status) or the address (webhook); absent when the secret holds the address (Slack, Teams). */
  url?: string;
  /** Commit status: owner/repo on the forge. */
  repository?: string;
  /** Empty: every event. */
  events: NoticeEvent[];
  secret?: SecretKey;
}

export const commitStatusProviders: readonly ProviderName[] = ['github', 'gitlab', 'gitea'];

/** `owner/repo` from a Git URL's path (`https://host/owner/repo.git`), as the forges name repositories. */
export function repositoryOf(gitUrl: string): string | undefined {
  let path: string;
  try {
    path = new URL(gitUrl).pathname;
  } catch {
    return undefined;
  }
  const p = path.replace(/^\/+|\/+$/g, '').replace(/\.git$/, '');
  return p.includes('/') ? p : undefined;
}
