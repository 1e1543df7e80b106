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
  /** `agent` only: sign-in with the token this file holds; without it the view is loopback-only. */
  viewTokenFile?: string;
}

export function withViewOptions(cmd: Command, standalone = false): Command {
  const c = standalone
    ? cmd.option(
        '--view-token-file <file>',
        'people sign in to the view with the token this file holds (read at each sign-in); without it the view answers without sign-in and only on a loopback --view-address',
      )
    : cmd;
  return c
    .option(
      '--view-address <host:port>',
      'serve the read-only web view (pages and its JSON API under /api/) on this address; people sign in with a bearer token and see what their RBAC lets them read',
    )
    .option('--view-dir <dir>', "the view's built pages (default: dist/view of the installation, which npm run build writes)")
    .option('--view-tls-cert <file>', 'serve the view over HTTPS with this certificate (PEM); without it put TLS in front of the view')
    .option('--view-tls-key <file>', 'the key of --view-tls-cert (PEM)');
}

/** Addresses only this machine reaches: the standalone view without sign-in listens on one of them. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The view's place from the flags, or undefined without --view-address. `standalone`: no sign-in without --view-token-file, so loopback only. */
export function viewPlaceOf(opts: ViewOptions, standalone = false): ViewPlace | undefined {
  if (opts.viewAddress === undefined) return undefined;
  const m = /^(.*):(\d+)$/.exec(opts.viewAddress);
  if (!m || Number(m[2]) > 65535) throw new UsageError(`--view-address ${opts.viewAddress}: expected HOST:PORT, e.g. 0.0.0.0:8443`);
  if ((opts.viewTlsCert === undefined) !== (opts.viewTlsKey === undefined)) throw new UsageError('--view-tls-cert and --view-tls-key go together');
  for (const f of [opts.viewTlsCert, opts.viewTlsKey, opts.viewTokenFile]) if (f !== undefined && !existsSync(f)) throw new UsageError(`${f}: no such file`);
  const host = m[1]!.replace(/^\[|\]$/g, '');
  if (standalone && opts.viewTokenFile === undefined && !isLoopbackHost(host))
    throw new UsageError(
      `--view-address ${opts.viewAddress}: without --view-token-file the view has no sign-in, so it listens on loopback only (e.g. 127.0.0.1:8080)`,
    );
  return {
    listen: { host, port: Number(m[2]) },
    staticDir: opts.viewDir ?? join(packageRoot, 'dist', 'view'),
    ...(opts.viewTlsCert && opts.viewTlsKey ? { tls: { cert: opts.viewTlsCert, key: opts.viewTlsKey } } : {}),
  };
}
