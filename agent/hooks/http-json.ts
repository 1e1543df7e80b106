import type { IncomingMessage, ServerResponse } from 'node:http';
import { WebhookError } from './git-webhook.ts';

/** What a push receiver accepts: larger bodies are refused with 413 before they are held in memory. */
const maxWebhookBody = 1024 * 1024;

/** One JSON answer. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(`${JSON.stringify(body)}\n`);
}

/** The request body, at most `limit` bytes (a WebhookError 413 beyond). */
export async function readBody(req: IncomingMessage, limit = maxWebhookBody): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new WebhookError(413, `webhook body larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
