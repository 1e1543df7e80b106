import { fetch } from 'undici';
import { KupenstackError } from '../errors.ts';
import { egressFor } from '../net/egress.ts';
import { describeSecret, type SecretResolver } from '../secrets/resolver.ts';
import type { Logger } from '../telemetry/logger.ts';
import { dedupKey, type Notice } from './notice.ts';
import { providers } from './providers/providers.ts';
import type { ResolvedTarget } from './providers/request.ts';
import type { NotifyTarget } from './target.ts';
import { Throttle, type ThrottleOptions } from './throttle.ts';

/** A notice that could not be sent: names the provider and the host, never the address's path or a secret. */
export class NotifyError extends KupenstackError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('notify.failed', message, options);
  }
}

/** Where logs may name a target: scheme and host only (a Slack or Teams path is its credential). */
function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(not a URL)';
  }
}

export interface NotifierOptions {
  targets: NotifyTarget[];
  secrets: SecretResolver;
  log: Logger;
  /** The egress gate's namespace: a Sync is cluster-scoped, so only the policy's `*` rules apply to it. */
  egressNamespace?: string;
  throttle?: ThrottleOptions;
  timeoutMs?: number;
}

/**
 * Sends a Sync's notices to its targets. `notify` never throws and never
 * waits: notices queue per target (so a commit status's `pending` reaches the
 * forge before its `success`), and a receiver that is down costs a log line,
 * never a reconcile. `idle()` is for tests and shutdown.
 */
export class Notifier {
  private readonly o: NotifierOptions;
  private readonly throttles: Throttle[];
  private readonly queues: Promise<void>[];

  constructor(o: NotifierOptions) {
    this.o = o;
    this.throttles = o.targets.map(() => new Throttle(o.throttle));
    this.queues = o.targets.map(() => Promise.resolve());
  }

  notify(n: Notice): void {
    this.o.targets.forEach((t, i) => {
      if (t.events.length > 0 && !t.events.includes(n.event)) return;
      const verdict = this.throttles[i]!.judge(dedupKey(n), Date.now());
      if (verdict !== 'send') {
        this.o.log.debug({ provider: t.provider, event: n.event, revision: n.revision, object: n.object, verdict }, 'notice not sent');
        return;
      }
      this.queues[i] = this.queues[i]!.then(() => this.send(t, n)).catch((err: unknown) => {
        this.o.log.warn({ provider: t.provider, event: n.event, revision: n.revision, error: (err as Error).message }, 'notice not delivered');
      });
    });
  }

  /** Resolves once every queued notice is sent or given up. */
  async idle(): Promise<void> {
    await Promise.all(this.queues);
  }

  private async send(t: NotifyTarget, n: Notice): Promise<void> {
    const target = await this.resolve(t);
    const req = providers[t.provider](n, target);
    if (!req) return;
    const where = `${t.provider} at ${hostOf(req.url)}`;
    const gate = egressFor(this.o.egressNamespace ?? '');
    try {
      await gate?.check(req.url);
    } catch (cause) {
      throw new NotifyError(`${where}: ${(cause as Error).message}`, { cause });
    }
    const res = await fetch(req.url, {
      method: 'POST',
      headers: req.headers,
      body: req.body,
      redirect: 'error',
      signal: AbortSignal.timeout(this.o.timeoutMs ?? 15_000),
      ...(gate ? { dispatcher: gate.dispatcher } : {}),
    }).catch((cause: unknown) => {
      // undici's message names the host at most; the cause stays for debugging, outside logs.
      throw new NotifyError(`${where}: ${(cause as Error).message}`, { cause });
    });
    await res.body?.cancel().catch(() => undefined);
    if (res.status >= 300) throw new NotifyError(`${where} answered HTTP ${res.status}`);
    this.o.log.info({ provider: t.provider, host: hostOf(req.url), event: n.event, revision: n.revision, object: n.object }, 'notice sent');
  }

  /** The secret is read at each send (a rotated token takes effect at once); Slack and Teams keep their address in it. */
  private async resolve(t: NotifyTarget): Promise<ResolvedTarget> {
    let secret: string | undefined;
    if (t.secret) {
      try {
        secret = await this.o.secrets.get(t.secret);
      } catch (cause) {
        throw new NotifyError(`${t.provider}: cannot read ${describeSecret(t.secret)}`, { cause });
      }
    }
    const addressInSecret = t.url === undefined;
    const url = addressInSecret ? (secret ?? '') : t.url!;
    const r: ResolvedTarget = { url };
    if (!addressInSecret && secret !== undefined) r.secret = secret;
    if (t.repository) r.repository = t.repository;
    return r;
  }
}
