import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { packageRoot } from '../paths.ts';
import type { ViewPlace } from '../view/server.ts';

/** The web view's flags (issue 52), shared by `controller` and `agent`: one block, so other flags merge beside it. */
export interface ViewOptions {
  viewAddress?: string;
  viewDir?: string;
  viewTlsCert?: string;
  viewTlsKey?: string;
}

export function withViewOptions(cmd: Command): Command {
  return cmd
    .option(
      '--view-address <host:port>',
      'serve the read-only web view (pages and its JSON API under /api/) on this address; people sign in with a bearer token and see what their RBAC lets them read',
    )
    .option('--view-dir <dir>', "the view's built pages (npm run build)", join(packageRoot, 'dist', 'view'))
    .option('--view-tls-cert <file>', 'serve the view over HTTPS with this certificate (PEM); without it put TLS in front of the view')
    .option('--view-tls-key <file>', 'the key of --view-tls-cert (PEM)');
}

/** The view's place from the flags, or undefined without --view-address. */
export function viewPlaceOf(opts: ViewOptions): ViewPlace | undefined {
  if (opts.viewAddress === undefined) return undefined;
  const m = /^(.*):(\d+)$/.exec(opts.viewAddress);
  if (!m || Number(m[2]) > 65535) throw new UsageError(`--view-address ${opts.viewAddress}: expected HOST:PORT, e.g. 0.0.0.0:8443`);
  if ((opts.viewTlsCert === undefined) !== (opts.viewTlsKey === undefined)) throw new UsageError('--view-tls-cert and --view-tls-key go together');
  for (const f of [opts.viewTlsCert, opts.viewTlsKey]) if (f !== undefined && !existsSync(f)) throw new UsageError(`${f}: no such file`);
  return {
    listen: { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) },
    staticDir: opts.viewDir ?? join(packageRoot, 'dist', 'view'),
    ...(opts.viewTlsCert && opts.viewTlsKey ? { tls: { cert: opts.viewTlsCert, key: opts.viewTlsKey } } : {}),
  };
}
