import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { KupenstackError } from '../errors.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { AgentMetrics } from '../telemetry/metrics.ts';
import { identify, normalizeRepoUrl, parsePush, refMatches, verify, WebhookError, type Delivery, type DeliveryLog } from './git-webhook.ts';
import { readBody } from './http-json.ts';

/**
 * `POST /hooks/<sync>` and `POST /hooks`: a Git push (GitHub, Gitea or
 * GitLab) for a Sync, the twin of registry-hook.ts. Both front ends mount it
 * (the standalone agent's server, the controller's) with the Syncs they know;
 * this module authenticates, refuses replays, matches the ref, counts and
 * logs, and tells each verified follower to run.
 */

export interface GitHookFollower {
  name: string;
  /** The repository and ref it follows; absent for a directory source (any verified push for it counts). */
  git?: { url: string; ref: Parameters<typeof refMatches>[1] };
  /** Whether it has a webhook secret configured at all. */
  hasSecret: boolean;
  /** The webhook secret, read at each delivery (a rotation needs no restart); errors name the reference, never a value. */
  secret(): Promise<string>;
  /** Runs it now (or right after its current run). */
  trigger(): Promise<void> | void;
}

export interface GitHookOptions {
  /** The follower a delivery's URL names (`/hooks/<sync>`). */
  byName(name: string): GitHookFollower | undefined;
  /** Every follower, for `POST /hooks` (matched by the repository URL in the payload). */
  all(): GitHookFollower[];
  deliveries: DeliveryLog;
  metrics: AgentMetrics;
  logger: Logger;
  /** How this front end tells the sender what is missing: an unknown Sync, a Sync without a secret. */
  advice: { unknown: (name: string) => string; noSecret: string };
}

export interface GitHookAnswer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * One delivery; `name` is the Sync the URL names, undefined for `POST /hooks`.
 * Metrics name a Sync only once it is known to exist: a name from an
 * unauthenticated URL would add a series per name (`unknown` instead).
 */
export async function handleGitHook(req: IncomingMessage, name: string | undefined, o: GitHookOptions): Promise<GitHookAnswer> {
  let label = name === undefined ? '*' : 'unknown';
  let provider = 'unknown';
  const count = (followers: GitHookFollower[], result: string): void => {
    for (const f of followers) o.metrics.webhooks.inc({ sync: f.name, provider, result });
  };
  try {
    const body = await readBody(req);
    const delivery = identify(req.headers, body);
    provider = delivery.provider;
    const candidates = name !== undefined ? named(o, name) : byRepository(o, parsePush(delivery, body)?.repoUrls ?? []);
    if (name !== undefined) label = name;
    const verified = await verifiedAmong(candidates, req, body, delivery, o);
    const fresh = firstDeliveries(verified, delivery, body, o.deliveries);
    if (fresh.length === 0) {
      count(verified, 'replayed');
      o.logger.info({ provider, delivery: delivery.id, syncs: verified.map((f) => f.name) }, 'webhook: replayed delivery ignored');
      return { status: 200, body: { result: 'replayed', message: `this push (delivery ${delivery.id}) was already received; ignored` } };
    }
    count(
      verified.filter((f) => !fresh.includes(f)),
      'replayed',
    );
    return await pushed(fresh, delivery, body, o, count);
  } catch (err) {
    if (!(err instanceof KupenstackError)) throw err;
    const status = err instanceof WebhookError ? err.status : 500;
    o.metrics.webhooks.inc({ sync: label, provider, result: 'rejected' });
    o.logger.warn({ sync: (name ?? '*').slice(0, 100), status, error: err.message }, 'webhook rejected');
    return { status, body: { error: err.message } };
  }
}

/**
 * The verified followers that had not received this push yet. Keyed on what
 * the signature covers (the body's digest), never on a delivery-id header:
 * a captured signed push resent with a new id is still a replay. Remembered
 * only once authentic, so forged deliveries cannot burn entries.
 */
function firstDeliveries(verified: GitHookFollower[], delivery: Delivery, body: Buffer, deliveries: DeliveryLog): GitHookFollower[] {
  const digest = createHash('sha256').update(body).digest('hex');
  return verified.filter((f) => deliveries.remember(`git:${f.name}:${delivery.provider}:${digest}`));
}

/** An authentic, first-seen delivery: a push of a followed ref triggers its followers. */
async function pushed(
  verified: GitHookFollower[],
  delivery: Delivery,
  body: Buffer,
  o: GitHookOptions,
  count: (followers: GitHookFollower[], result: string) => void,
): Promise<GitHookAnswer> {
  const provider = delivery.provider;
  const push = parsePush(delivery, body);
  if (!push) {
    count(verified, 'ignored');
    return { status: 200, body: { result: 'ignored', message: `event "${delivery.event}" is not a push` } };
  }
  const moved = verified.filter((f) => !f.git || refMatches(push.ref, f.git.ref));
  count(
    verified.filter((f) => !moved.includes(f)),
    'ignored',
  );
  if (moved.length === 0)
    return { status: 200, body: { result: 'ignored', message: `${push.ref} is not followed by ${verified.map((f) => f.name).join(', ')}` } };
  for (const f of moved) await f.trigger();
  count(moved, 'triggered');
  o.logger.info({ provider, delivery: delivery.id, ref: push.ref, after: push.after, syncs: moved.map((f) => f.name) }, 'webhook: push received, fetching now');
  return { status: 202, body: { result: 'triggered', syncs: moved.map((f) => f.name) } };
}

function named(o: GitHookOptions, name: string): GitHookFollower[] {
  const f = o.byName(name);
  if (!f) throw new WebhookError(404, o.advice.unknown(name));
  return [f];
}

/** Not yet authenticated: the payload only narrows down whose secret to try. */
function byRepository(o: GitHookOptions, repoUrls: string[]): GitHookFollower[] {
  const urls = new Set(repoUrls.map(normalizeRepoUrl));
  const out = o.all().filter((f) => f.git && urls.has(normalizeRepoUrl(f.git.url)));
  if (out.length === 0) throw new WebhookError(404, 'no Sync follows the repository named in this payload');
  return out;
}

/** The candidates whose secret verifies the delivery; none: the precise reason of the first, without revealing anything of the secret. */
async function verifiedAmong(
  candidates: GitHookFollower[],
  req: IncomingMessage,
  body: Buffer,
  delivery: Delivery,
  o: GitHookOptions,
): Promise<GitHookFollower[]> {
  const out: GitHookFollower[] = [];
  for (const f of candidates) {
    if (!f.hasSecret) continue;
    try {
      verify(delivery, req.headers, body, await f.secret());
      out.push(f);
    } catch (err) {
      if (!(err instanceof WebhookError)) throw err;
    }
  }
  if (out.length > 0) return out;
  const first = candidates.find((c) => c.hasSecret);
  if (!first) throw new WebhookError(403, `Sync ${candidates.map((f) => f.name).join(', ')} has no webhook secret ${o.advice.noSecret}`);
  verify(delivery, req.headers, body, await first.secret());
  throw new WebhookError(401, 'the signature does not verify');
}
