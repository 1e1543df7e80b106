import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * Who may read `/metrics`: its series name every Sync, namespace-free counts
 * of work, and the process's state, which is not every pod's business.
 * - loopback always (the pod itself, `kubectl port-forward`, which needs
 *   the right to enter the pod anyway);
 * - `tokenFile`: other hosts send `Authorization: Bearer <the file's content>`
 *   (read again at most every few seconds: a rotated Secret needs no restart);
 * - `open`: anyone who reaches the port (the operator's NetworkPolicy decides);
 * - neither (the default): loopback only.
 */
export interface MetricsAccess {
  tokenFile?: string;
  open?: boolean;
}

export interface MetricsRefusal {
  status: number;
  error: string;
}

/** How long a read token is believed before the file is read again. */
const tokenTtlMs = 5_000;

export class MetricsGate {
  private readonly access: MetricsAccess;
  private token?: { value: string; at: number };

  constructor(access: MetricsAccess = {}) {
    this.access = access;
  }

  /** Undefined: serve it; else why not (never the token, nor how much of it matched). */
  async judge(req: IncomingMessage): Promise<MetricsRefusal | undefined> {
    if (isLoopback(req.socket.remoteAddress)) return undefined;
    const file = this.access.tokenFile;
    if (file === undefined) {
      if (this.access.open === true) return undefined;
      return {
        status: 403,
        error: '/metrics is served to other hosts only with a bearer token (--metrics-token-file; chart: metrics.tokenSecret) or with --metrics-open',
      };
    }
    const expected = await this.read(file);
    if (expected === undefined) return { status: 503, error: '/metrics: the metrics token file cannot be read or is empty' };
    const auth = req.headers.authorization;
    const given = auth === undefined ? undefined : /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim();
    if (given === undefined || !same(given, expected))
      return { status: 401, error: '/metrics needs "Authorization: Bearer <token>" with the token of --metrics-token-file' };
    return undefined;
  }

  private async read(file: string): Promise<string | undefined> {
    const now = Date.now();
    if (this.token && now - this.token.at < tokenTtlMs) return this.token.value || undefined;
    const value = await readFile(file, 'utf8').then(
      (text) => text.trim(),
      () => '',
    );
    this.token = { value, at: now };
    return value || undefined;
  }
}

/** Constant-time: both sides hashed to one length first. */
function same(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** 127.0.0.0/8, ::1, and IPv4 loopback as an IPv6-mapped address (a dual-stack socket's view). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined || isIP(address) === 0) return false;
  const v4 = address.toLowerCase().replace(/^::ffff:/, '');
  return v4 === '::1' || (isIP(v4) === 4 && v4.startsWith('127.'));
}
