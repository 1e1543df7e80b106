import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { KupenstackError } from '../errors.ts';

/**
 * Push webhooks of GitHub, Gitea (and Forgejo) and GitLab: who sent it, is it
 * authentic, have we seen it, and which repository and ref it is about.
 * Pure functions; server.ts wires them to the Syncs.
 */

export type Provider = 'github' | 'gitea' | 'gitlab';

export class WebhookError extends KupenstackError {
  readonly status: number;

  constructor(status: number, message: string) {
    super('webhook', message);
    this.status = status;
  }
}

export interface Delivery {
  provider: Provider;
  /** The provider's delivery id, or a hash of the body when it sends none: for logs only (replays are told by the body, git-hook.ts). */
  id: string;
  event: string;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Which provider sent it, from its own headers. */
export function identify(headers: IncomingHttpHeaders, body: Buffer): Delivery {
  const bodyId = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  // Gitea also sends X-GitHub-* headers for compatibility: look at its own first.
  if (
    header(headers, 'x-gitea-event') !== undefined ||
    header(headers, 'x-gitea-signature') !== undefined ||
    header(headers, 'x-forgejo-signature') !== undefined
  )
    return {
      provider: 'gitea',
      id: header(headers, 'x-gitea-delivery') ?? header(headers, 'x-forgejo-delivery') ?? bodyId,
      event: header(headers, 'x-gitea-event') ?? header(headers, 'x-forgejo-event') ?? '',
    };
  if (header(headers, 'x-gitlab-event') !== undefined || header(headers, 'x-gitlab-token') !== undefined)
    return {
      provider: 'gitlab',
      id: header(headers, 'x-gitlab-event-uuid') ?? header(headers, 'idempotency-key') ?? header(headers, 'x-gitlab-webhook-uuid') ?? bodyId,
      event: header(headers, 'x-gitlab-event') ?? '',
    };
  if (header(headers, 'x-github-event') !== undefined || header(headers, 'x-hub-signature-256') !== undefined)
    return { provider: 'github', id: header(headers, 'x-github-delivery') ?? bodyId, event: header(headers, 'x-github-event') ?? '' };
  throw new WebhookError(400, 'not a GitHub, Gitea or GitLab webhook (no X-GitHub-Event, X-Gitea-Event or X-Gitlab-Event header)');
}

/** Constant-time: the time taken says nothing about how much of the secret matched. */
export function sameSecret(a: string, b: string): boolean {
  // Hash both sides to equal lengths first; timingSafeEqual refuses different lengths (which would leak the length).
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

export function hmacHex(secret: string, body: Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** How far a signed GitLab delivery's timestamp may be from now (Standard Webhooks' tolerance). */
const signedTimestampToleranceMs = 5 * 60_000;

/**
 * GitLab's signing token (Standard Webhooks): `webhook-signature: v1,<base64>`
 * (one or more, space-separated), the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`
 * under the token (`whsec_<base64 key>`, or the secret's bytes as given).
 * Authenticates the body and its time, so a capture is stale after 5 minutes.
 */
function verifySigned(headers: IncomingHttpHeaders, body: Buffer, secret: string, now: number): void {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  if (id === undefined || timestamp === undefined || !/^\d{1,12}$/.test(timestamp))
    throw new WebhookError(401, 'GitLab signed webhook without webhook-id and a webhook-timestamp in seconds');
  if (Math.abs(now - Number(timestamp) * 1000) > signedTimestampToleranceMs)
    throw new WebhookError(401, `GitLab signed webhook: webhook-timestamp ${timestamp} is more than 5 minutes from now (a replay, or a clock to fix)`);
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  const given = (header(headers, 'webhook-signature') ?? '').split(' ').filter((s) => s.startsWith('v1,'));
  let ok = false;
  // Every signature is compared (no early exit): the time says nothing about which one matched.
  for (const g of given) if (sameSecret(g.slice(3), expected)) ok = true;
  if (!ok)
    throw new WebhookError(
      401,
      "GitLab signed webhook: webhook-signature does not match the HMAC-SHA256 under the Sync's webhook secret (the hook's signing token)",
    );
}

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hmac hex>`; Gitea: `X-Gitea-Signature: <hmac hex>`
 * (HMAC-SHA256 of the raw body); GitLab: its signing token's `webhook-signature`
 * when it sends one (judged alone), else `X-Gitlab-Token: <secret>` as is. The
 * token authenticates the sender, not the body: a push only tells the Sync to
 * fetch its own ref from Git now (the payload's commit is never applied), so a
 * forged body costs one fetch.
 */
export function verify(delivery: Delivery, headers: IncomingHttpHeaders, body: Buffer, secret: string, now = Date.now()): void {
  if (delivery.provider === 'gitlab') {
    if (header(headers, 'webhook-signature') !== undefined) return verifySigned(headers, body, secret, now);
    const token = header(headers, 'x-gitlab-token');
    if (token === undefined)
      throw new WebhookError(401, "GitLab webhook without X-Gitlab-Token: set the secret token of the webhook to the Sync's webhook secret");
    if (!sameSecret(token, secret)) throw new WebhookError(401, "GitLab webhook: X-Gitlab-Token does not match the Sync's webhook secret");
    return;
  }
  const name =
    delivery.provider === 'github' ? 'x-hub-signature-256' : header(headers, 'x-gitea-signature') !== undefined ? 'x-gitea-signature' : 'x-forgejo-signature';
  const given = header(headers, name);
  const label = delivery.provider === 'github' ? 'GitHub' : 'Gitea';
  if (given === undefined) throw new WebhookError(401, `${label} webhook without ${name}: give the webhook a secret equal to the Sync's webhook secret`);
  const expected = (delivery.provider === 'github' ? 'sha256=' : '') + hmacHex(secret, body);
  if (!sameSecret(given.trim().toLowerCase(), expected))
    throw new WebhookError(401, `${label} webhook: ${name} does not match the HMAC-SHA256 of the body under the Sync's webhook secret`);
}

export interface Push {
  /** `refs/heads/main`, `refs/tags/v1.2.0`. */
  ref: string;
  /** New commit (all zeros when the ref was deleted). */
  after?: string;
  /** Every URL the payload gives for the repository (clone, ssh, web). */
  repoUrls: string[];
}

/** The push (or tag push) in a payload; undefined for other events (ping, issues…). */
export function parsePush(delivery: Delivery, body: Buffer): Push | undefined {
  const event = delivery.event.toLowerCase();
  const isPush =
    delivery.provider === 'gitlab' ? event === 'push hook' || event === 'tag push hook' : event === 'push' || event === 'create' || event === 'delete';
  if (!isPush) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookError(400, 'the webhook body is not JSON (set the content type of the webhook to application/json)');
  }
  // `null`, a list or a number parse as JSON too (found by fuzzing): a push payload is an object.
  if (!isRecord(parsed)) throw new WebhookError(400, 'the push payload is not a JSON object');
  const payload = parsed;
  let ref = typeof payload.ref === 'string' ? payload.ref : '';
  // GitHub/Gitea create/delete events name the ref without its prefix.
  if ((event === 'create' || event === 'delete') && typeof payload.ref_type === 'string' && !ref.startsWith('refs/'))
    ref = `refs/${payload.ref_type === 'tag' ? 'tags' : 'heads'}/${ref}`;
  if (!ref) throw new WebhookError(400, 'push payload without "ref"');
  const repo = isRecord(payload.repository) ? payload.repository : {};
  const project = isRecord(payload.project) ? payload.project : {};
  const urls = [
    repo.clone_url,
    repo.ssh_url,
    repo.html_url,
    repo.git_http_url,
    repo.git_ssh_url,
    repo.url,
    repo.homepage,
    project.git_http_url,
    project.git_ssh_url,
    project.http_url,
    project.web_url,
  ].filter((u): u is string => typeof u === 'string' && u !== '');
  return { ref, after: typeof payload.after === 'string' ? payload.after : undefined, repoUrls: urls };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Same repository whatever the spelling: no credentials, no trailing `.git` or `/`, case-insensitive host. */
export function normalizeRepoUrl(url: string): string {
  const m = /^([a-z+]+:\/\/)?(?:[^@/]*@)?([^/:]+)(:\d+)?[/:]?(.*)$/i.exec(url.trim());
  if (!m) return url;
  const path = (m[4] ?? '').replace(/\/+$/, '').replace(/\.git$/, '');
  return `${m[2]!.toLowerCase()}/${path}`;
}

/** Whether a pushed ref moves what a Sync follows. */
export function refMatches(pushed: string, follow: { branch?: string; tag?: string; semver?: string; commit?: string }): boolean {
  if (follow.branch !== undefined) return pushed === `refs/heads/${follow.branch}`;
  if (follow.tag !== undefined) return pushed === `refs/tags/${follow.tag}`;
  if (follow.semver !== undefined) return pushed.startsWith('refs/tags/');
  return false;
}

/**
 * How long a delivery is remembered: longer than a registry event's
 * staleness window (registry-hook.ts, 15 minutes and 5 of clock skew), so a
 * dated event is refused by one or the other. A Git push carries no date of
 * its own (GitLab's signed ones aside): the same push body after this long
 * (a branch moved back and forth) is a push again, and a capture replayed
 * later can do no more than that push did, make the Sync fetch its ref.
 */
export const deliveryMemoryMs = 30 * 60_000;

/** Deliveries seen recently (bounded; oldest forgotten first): a replayed delivery is acknowledged and ignored. */
export class DeliveryLog {
  private readonly seen = new Map<string, number>();

  private readonly capacity: number;
  private readonly memoryMs: number;

  constructor(capacity = 1000, memoryMs = deliveryMemoryMs) {
    this.capacity = capacity;
    this.memoryMs = memoryMs;
  }

  /** True the first time a key is offered (or once it was forgotten), false for a replay. */
  remember(key: string, now = Date.now()): boolean {
    const at = this.seen.get(key);
    this.seen.delete(key);
    // Refresh its place: a replay storm keeps the key remembered.
    this.seen.set(key, now);
    if (at !== undefined && now - at < this.memoryMs) return false;
    while (this.seen.size > this.capacity) this.seen.delete(this.seen.keys().next().value!);
    return true;
  }
}
