import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { KupenstackError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { distribution } from './registry-senders/distribution.ts';
import { dockerhub } from './registry-senders/dockerhub.ts';
import { github } from './registry-senders/github.ts';
import { harbor } from './registry-senders/harbor.ts';
import { header, RegistryHookError, type RegistryDelivery, type RegistryPush, type Sender, type SenderParser } from './registry-senders/push.ts';
import { quay } from './registry-senders/quay.ts';
import { hmacHex, sameSecret, WebhookError, type DeliveryLog } from './git-webhook.ts';
import { readBody } from './http-json.ts';

/**
 * `POST /hooks/registry`: a registry says a tag moved; the Images that
 * follow that repository and tag (or a semver range the tag satisfies) are
 * resolved again at once, whatever their interval. Both front ends mount it
 * (the agent's server, the controller's) with the followers they know, the
 * twin of git-hook.ts: serveRegistryHook reads the body, counts and logs;
 * handleRegistryHook, its core, authenticates, refuses replays and stale
 * events, and tells each follower what moved.
 */

/** GitHub first: its headers name it; the others are told apart by their payload's shape. */
const senders: SenderParser[] = [github, distribution, harbor, quay, dockerhub];

/** Older than this (by the sender's own timestamp) is refused as a replay: the delivery log only remembers so much. */
export const maxEventAgeMs = 15 * 60_000;
/** Clocks disagree a little: an event this far in the future is still believed. */
const maxClockSkewMs = 5 * 60_000;

export interface RegistryHookFollower {
  /** How answers and logs name it (a Sync name). */
  name: string;
  /** The shared secret; undefined when this follower has none configured. Read at each delivery (rotation needs no restart). */
  secret(): Promise<string | undefined>;
  /** Marks what it follows among the pushes as due now; true when anything matched. Makes no registry request. */
  moved(pushes: RegistryPush[]): boolean;
  /** Resolves again now (or right after its current run). */
  trigger(): Promise<void> | void;
}

export interface RegistryHookRequest {
  body: Buffer;
  headers: IncomingHttpHeaders;
  /** The URL's query: a secret there (`?token=`) is refused, never compared. */
  query: URLSearchParams;
}

export type RegistryHookResult = 'triggered' | 'ignored' | 'replayed' | 'stale' | 'rejected';

export interface RegistryHookAnswer {
  status: number;
  result: RegistryHookResult;
  sender?: Sender;
  /** Followers told to resolve again. */
  triggered: string[];
  pushes: RegistryPush[];
  body: Record<string, unknown>;
}

function reject(err: RegistryHookError, sender?: Sender): RegistryHookAnswer {
  return { status: err.status, result: 'rejected', ...(sender ? { sender } : {}), triggered: [], pushes: [], body: { error: err.message } };
}

/** The header a signing proxy (or any sender that can compute it) puts the body's HMAC in, as GitHub's: `sha256=<hex>`. */
export const signatureHeader = 'x-kupenstack-signature-256';

/**
 * What the sender presented. A signature (GitHub's X-Hub-Signature-256, or
 * X-Kupenstack-Signature-256 from any sender) authenticates the body too and
 * is judged alone. Otherwise a shared secret: `Authorization: Bearer <secret>`
 * (distribution's endpoint `headers`), `Authorization: <secret>` (Harbor's
 * "Auth Header") or `X-Kupenstack-Token`; those registries can only send a
 * fixed header, so their body is not authenticated: it is believed only as a
 * hint of which tags to resolve again from the registry itself (a forged one
 * costs a resolution, never a digest or content), see docs/how-to/registry-notifications.md.
 */
function authentic(sender: Sender, req: RegistryHookRequest, secret: string): boolean {
  const signature = header(req.headers, sender === 'github' ? 'x-hub-signature-256' : signatureHeader);
  if (signature !== undefined || sender === 'github')
    return signature !== undefined && sameSecret(signature.trim().toLowerCase(), `sha256=${hmacHex(secret, req.body)}`);
  const auth = header(req.headers, 'authorization');
  const presented = [auth?.replace(/^Bearer\s+/i, '').trim(), header(req.headers, 'x-kupenstack-token')];
  let ok = false;
  // Every candidate is compared (no early exit): the time says nothing about which one matched.
  for (const p of presented) if (p !== undefined && sameSecret(p, secret)) ok = true;
  return ok;
}

function howToAuthenticate(sender: Sender): string {
  return sender === 'github'
    ? "the GitHub webhook's secret must be the Sync's webhook secret (X-Hub-Signature-256 did not verify)"
    : `sign the body (${signatureHeader}: sha256=<HMAC-SHA256 of the body under the secret>) or send the secret as "Authorization: Bearer <secret>" (distribution: notifications.endpoints[].headers; Harbor: Auth Header)`;
}

/** A secret in the URL ends up in access logs, proxies and the sender's settings: refused even when right, never compared. */
const queryTokenRefused =
  'a secret in the URL (?token=) is refused: URLs are kept in access and proxy logs; send it as "Authorization: Bearer <secret>" or sign the body (X-Kupenstack-Signature-256); Quay and Docker Hub need a proxy that adds the header (docs/how-to/registry-notifications.md)';

export async function handleRegistryHook(
  req: RegistryHookRequest,
  followers: RegistryHookFollower[],
  deliveries: DeliveryLog,
  now = Date.now(),
): Promise<RegistryHookAnswer> {
  let payload: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(req.body.toString('utf8'));
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    payload = parsed as Record<string, unknown>;
  } catch {
    return reject(new RegistryHookError(400, 'the registry notification is not a JSON object'));
  }
  const parser = senders.find((s) => s.recognises(req.headers, payload));
  if (!parser)
    return reject(
      new RegistryHookError(
        400,
        'not a registry notification KupenStack knows: expected a distribution events envelope, a Harbor, Quay or Docker Hub webhook, or a GitHub package event',
      ),
    );
  const sender = parser.sender;
  if (req.query.has('token')) return reject(new RegistryHookError(401, queryTokenRefused), sender);

  // Not authenticated yet: nothing in the payload is believed before this.
  const verified: RegistryHookFollower[] = [];
  let configured = 0;
  for (const f of followers) {
    const secret = await f.secret();
    if (secret === undefined) continue;
    configured++;
    if (authentic(sender, req, secret)) verified.push(f);
  }
  if (configured === 0)
    return reject(
      new RegistryHookError(
        403,
        'no Sync has a webhook secret configured (webhook: {secretEnv|secretFile|secretRef}); registry notifications are authenticated with it',
      ),
      sender,
    );
  if (verified.length === 0) return reject(new RegistryHookError(401, `the notification is not authenticated: ${howToAuthenticate(sender)}`), sender);

  let delivery: RegistryDelivery;
  try {
    delivery = parser.parse(req.headers, payload);
  } catch (err) {
    return reject(new RegistryHookError(400, `the ${sender} notification could not be read: ${err instanceof Error ? err.message : String(err)}`), sender);
  }
  const answer = (status: number, result: RegistryHookResult, message: string, triggered: string[] = []): RegistryHookAnswer => ({
    status,
    result,
    sender,
    triggered,
    pushes: delivery.pushes,
    body: { result, message, ...(triggered.length > 0 ? { syncs: triggered } : {}) },
  });
  // 2xx even when ignored: a sender retries other answers (distribution forever), and nothing it resends would change ours.
  // A time no Date can hold (Harbor's occur_at in the far future) is no time of now either: stale, and said without formatting it as a date.
  if (delivery.at !== undefined) {
    const at = delivery.at;
    const notADate = Number.isNaN(new Date(at).getTime());
    if (notADate || now - at > maxEventAgeMs || at - now > maxClockSkewMs) {
      return answer(
        200,
        'stale',
        `the event is dated ${notADate ? `${at} ms after 1970 (not a date)` : new Date(at).toISOString()}, outside ${maxEventAgeMs / 60_000} minutes of now; ignored as a replay`,
      );
    }
  }
  // Remembered only once authentic, so forged deliveries cannot burn entries. Keyed on the body (what a signature
  // covers, and what the event ids live in), never on a header: the same body with a new delivery id is a replay.
  const digest = `sha256:${createHash('sha256').update(req.body).digest('hex')}`;
  if (!deliveries.remember(`registry:${sender}:${digest}`))
    return answer(200, 'replayed', `delivery ${(delivery.id ?? digest).slice(0, 80)} was already received; ignored`);
  if (delivery.pushes.length === 0) return answer(200, 'ignored', `event "${delivery.event}" pushes no tag`);
  const moved = verified.filter((f) => f.moved(delivery.pushes));
  const named = delivery.pushes.map((p) => `${p.host ? `${p.host}/` : ''}${p.repository}:${p.tag}`).join(', ');
  if (moved.length === 0) return answer(200, 'ignored', `no Image follows ${named}`);
  for (const f of moved) await f.trigger();
  return answer(
    202,
    'triggered',
    `${named}: resolving again`,
    moved.map((f) => f.name),
  );
}

export interface RegistryHookOptions {
  /** The followers of this delivery (`/hooks/registry/<sync>` names one); `unknown`: the URL names none, answered 404 with that message. */
  followers(): RegistryHookFollower[] | { unknown: string };
  deliveries: DeliveryLog;
  metrics: AgentMetrics;
  logger: Logger;
  /** How metrics name a delivery that triggered no follower: the Sync the URL names, `*`, the controller. */
  label: string;
  /** What a triggered delivery's log line and answer say it moved; default: the followers triggered, as `syncs`. */
  moved?(answer: RegistryHookAnswer): { log: Record<string, unknown>; body: Record<string, unknown> };
}

/** One POSTed delivery, as a front end's server hands it over: read, answered, counted per follower, logged (never a secret: the URL's ?token= stays out). */
export async function serveRegistryHook(req: IncomingMessage, o: RegistryHookOptions): Promise<{ status: number; body: Record<string, unknown> }> {
  let body: Buffer;
  try {
    body = await readBody(req);
  } catch (err) {
    return { status: err instanceof WebhookError ? err.status : 400, body: { error: (err as Error).message } };
  }
  const followers = o.followers();
  if (!Array.isArray(followers)) return { status: 404, body: { error: followers.unknown } };
  const query = new URL(req.url ?? '/', 'http://hooks').searchParams;
  let answer: RegistryHookAnswer;
  try {
    answer = await handleRegistryHook({ body, headers: req.headers, query }, followers, o.deliveries);
  } catch (err) {
    if (!(err instanceof KupenstackError)) throw err;
    // A secret that cannot be read: the operator's problem, named without any value.
    o.logger.warn({ error: err.message }, 'registry notification rejected');
    return { status: 500, body: { error: err.message } };
  }
  const sender = answer.sender ?? 'unknown';
  const counted = answer.triggered.length > 0 ? answer.triggered : [o.label];
  for (const sync of counted) o.metrics.webhooks.inc({ sync, provider: `registry-${sender}`, result: answer.result });
  const pushes = answer.pushes.map((p) => `${p.host ? `${p.host}/` : ''}${p.repository}:${p.tag}${p.digest ? `@${p.digest}` : ''}`);
  if (answer.result === 'rejected') o.logger.warn({ sender, status: answer.status, error: answer.body.error }, 'registry notification rejected');
  else if (answer.result !== 'triggered')
    o.logger.info({ sender, pushes, result: answer.result, message: answer.body.message }, 'registry notification ignored');
  else {
    const moved = o.moved?.(answer) ?? { log: { syncs: answer.triggered }, body: {} };
    o.logger.info({ sender, pushes, ...moved.log }, 'registry notification: tag moved, resolving now');
    return { status: answer.status, body: { ...answer.body, ...moved.body } };
  }
  return { status: answer.status, body: answer.body };
}
