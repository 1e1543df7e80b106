import { createHmac } from 'node:crypto';
import type { Provider } from './request.ts';
import { json } from './request.ts';

/** The header a receiver checks: `sha256=` and the hex HMAC-SHA256 of the raw body, keyed with the target's secret (GitHub's X-Hub-Signature-256 shape). */
export const signatureHeader = 'x-kupenstack-signature';

function signature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The generic JSON webhook: the notice as it is, signed when a secret is set. */
export const webhook: Provider = (n, t) => {
  const body = JSON.stringify(n);
  const headers: Record<string, string> = { ...json, 'x-kupenstack-event': n.event };
  if (t.secret !== undefined) headers[signatureHeader] = signature(t.secret, body);
  return { url: t.url, headers, body };
};
