import { commitOf, isRevisionEvent, type Notice, type RevisionEvent } from '../notice.ts';

/** What every forge's commit status carries: the commit, a context per Sync, a short link-free description. */
export interface CommitStatus {
  sha: string;
  /** `kupenstack/<sync>`: one status line per Sync on the commit. */
  context: string;
  description: string;
  event: RevisionEvent;
}

/** The forges cut descriptions (GitHub at 140 characters); cut here so the end is ours. */
const maxDescription = 140;

/** Undefined for a revision that is no commit (a folder source), and for an object event: a commit's status is its revision's outcome. */
export function commitStatus(n: Notice): CommitStatus | undefined {
  const sha = commitOf(n.revision);
  if (!sha || !isRevisionEvent(n.event)) return undefined;
  const text = n.diagnostic ? `${n.summary}: ${n.diagnostic}` : n.summary;
  const description = text.length > maxDescription ? `${text.slice(0, maxDescription - 1)}…` : text;
  return { sha, context: `kupenstack/${n.sync}`, description, event: n.event };
}
