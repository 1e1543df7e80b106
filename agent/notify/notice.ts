/**
 * What a Sync tells the outside world (Flux's notification-controller
 * events, Argo CD's triggers): one outcome of one revision. Built by the
 * shared Sync run, sent by the Notifier to every target that wants it.
 * Nothing in it is a secret: the summary is made link-free, so a Git URL
 * (with or without credentials) never leaves the cluster in a message.
 */
export type RevisionEvent = 'started' | 'applied' | 'rejected' | 'held' | 'failed';
/** About one object (or the cloud) between revisions, from the resource and cloud loops (object-notice.ts): no commit status. */
export type ObjectEvent = 'drift-corrected' | 'healed' | 'image-rolled' | 'upgrade-step' | 'upgrade-failed';
export type NoticeEvent = RevisionEvent | ObjectEvent;

export const revisionEvents: readonly RevisionEvent[] = ['started', 'applied', 'rejected', 'held', 'failed'];
export const noticeEvents: readonly NoticeEvent[] = [...revisionEvents, 'drift-corrected', 'healed', 'image-rolled', 'upgrade-step', 'upgrade-failed'];

export function isRevisionEvent(e: NoticeEvent): e is RevisionEvent {
  return (revisionEvents as readonly string[]).includes(e);
}

export interface Notice {
  event: NoticeEvent;
  /** The Sync's name. */
  sync: string;
  /** The source's revision string (`main@sha1:<sha>`, or a content revision for folders). */
  revision: string;
  /** One link-free line: what happened. */
  summary: string;
  /** The first diagnostic (`file:line:col: message`) of a rejected revision, or the failing object. */
  diagnostic?: string;
  /** The object an object event is about: `namespace/Kind/name`. */
  object?: string;
  severity: 'info' | 'warning' | 'error';
  at: string;
}

const severities: Record<NoticeEvent, Notice['severity']> = {
  started: 'info',
  applied: 'info',
  held: 'warning',
  rejected: 'error',
  failed: 'error',
  // Something changed the cloud behind Git's back, or broke: worth a look, not a page.
  'drift-corrected': 'warning',
  healed: 'warning',
  'image-rolled': 'info',
  'upgrade-step': 'info',
  'upgrade-failed': 'error',
};

/** Links are dropped: they can carry credentials, and a receiver may render them as clickable lures. */
export function linkFree(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<link removed>');
}

export function makeNotice(event: NoticeEvent, sync: string, revision: string, summary: string, diagnostic?: string, object?: string): Notice {
  const n: Notice = { event, sync, revision, summary: linkFree(summary).slice(0, 1000), severity: severities[event], at: new Date().toISOString() };
  if (diagnostic) n.diagnostic = linkFree(diagnostic).slice(0, 1000);
  if (object) n.object = object;
  return n;
}

/** What the dedup compares: a revision's outcome once per revision; an object event once per object and what happened to it. */
export function dedupKey(n: Notice): string {
  return n.object === undefined ? `${n.event} ${n.sync} ${n.revision}` : `${n.event} ${n.sync} ${n.revision} ${n.object} ${n.summary}`;
}

/** The commit a Git revision names (`<ref>@sha1:<40 hex>`); none for a folder's content revision. */
export function commitOf(revision: string): string | undefined {
  return /@sha(?:1|256):([0-9a-f]{40}|[0-9a-f]{64})$/.exec(revision)?.[1];
}

/** The headline every chat provider shows. */
export function headline(n: Notice): string {
  const what: Record<NoticeEvent, string> = {
    started: 'applying',
    applied: 'applied',
    rejected: 'rejected',
    held: 'deletions held',
    failed: 'failed',
    'drift-corrected': 'drift corrected in',
    healed: 'healed',
    'image-rolled': 'new image version for',
    'upgrade-step': 'cloud upgrade step for',
    'upgrade-failed': 'cloud upgrade failed for',
  };
  return n.object === undefined ? `Sync ${n.sync}: ${what[n.event]} ${n.revision}` : `Sync ${n.sync}: ${what[n.event]} ${n.object}`;
}
