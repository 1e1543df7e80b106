import { readFile, stat } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** The headers of every page: no framing by other sites, scripts and styles from the view itself only (no CDN). */
const pageHeaders = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * The UI's built files (`npm run build` → dist/view/): a file that exists is
 * sent as it is (hashed assets cached a year), any other path gets
 * index.html, so every page of the UI has a URL that can be shared and
 * reloaded. Paths never leave the directory.
 */
export async function serveStatic(dir: string, res: ServerResponse, path: string): Promise<void> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    decoded = '/';
  }
  const clean = normalize(decoded).replace(/^([/\\])+/, '');
  const file = join(dir, clean);
  const inside = file === dir || file.startsWith(dir.endsWith(sep) ? dir : dir + sep);
  let target = join(dir, 'index.html');
  if (inside && clean !== '' && !clean.split(/[/\\]/).includes('..')) {
    const st = await stat(file).catch(() => undefined);
    if (st?.isFile()) target = file;
  }
  let body: Buffer;
  try {
    body = await readFile(target);
  } catch {
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', ...pageHeaders });
    res.end(`the view's pages are not built: ${join(dir, 'index.html')} is missing (npm run build)\n`);
    return;
  }
  const immutable = target !== join(dir, 'index.html') && /[.-][0-9a-zA-Z_-]{8,}\.(js|css|woff2)$/.test(target);
  res.writeHead(200, {
    'content-type': types[extname(target)] ?? 'application/octet-stream',
    'content-length': body.length,
    'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    ...pageHeaders,
  });
  res.end(body);
}
