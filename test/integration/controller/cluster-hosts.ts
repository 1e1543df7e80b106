import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getJson } from './harness.ts';

/**
 * The test bed's stand-in for cluster DNS, for processes on the host (the test bed has no
 * kube-proxy and no cluster DNS: test/charts/README.md). A cloud's catalog and its generated
 * clouds.yaml name in-cluster Services (`keystone-api.<ns>.svc.cluster.local`), which a
 * controller in a pod resolves through the cluster's DNS. Here a hosts file maps each Service
 * of the cloud's namespace to its first ready pod address (what the charts' entrypoint does in
 * each pod), kept current while the cloud installs, and `wrap` runs a process in a private
 * mount namespace (`unshare --mount`) that sees that file as /etc/hosts — the machine's own
 * /etc/hosts is never touched. The file is rewritten in place (same inode), so a process
 * already running sees each new address on its next lookup.
 */
export class ClusterHosts {
  readonly file: string;
  private readonly dir: string;
  private readonly namespace: string;
  private timer?: NodeJS.Timeout;

  constructor(namespace: string) {
    this.namespace = namespace;
    this.dir = mkdtempSync(join(tmpdir(), 'ks-cluster-hosts-'));
    this.file = join(this.dir, 'hosts');
    writeFileSync(this.file, '');
    this.refresh();
  }

  /** Rewrites the file from the namespace's Endpoints now; `start` keeps doing it. */
  refresh(): void {
    const eps = getJson<{ items: { metadata: { name: string }; subsets?: { addresses?: { ip: string }[] }[] }[] }>(['-n', this.namespace, 'get', 'endpoints']).items;
    const lines = ['127.0.0.1 localhost', '::1 localhost ip6-localhost'];
    for (const e of eps) {
      const ip = e.subsets?.[0]?.addresses?.[0]?.ip;
      if (ip) lines.push(`${ip} ${e.metadata.name}.${this.namespace}.svc.cluster.local ${e.metadata.name}.${this.namespace}.svc`);
    }
    const text = `${lines.join('\n')}\n`;
    // In place (writeFileSync truncates the same inode): the bind mounts see it.
    if (readFileSync(this.file, 'utf8') !== text) writeFileSync(this.file, text);
  }

  start(everyMs = 3_000): void {
    this.timer = setInterval(() => {
      try {
        this.refresh();
      } catch {
        // The API server busy for a moment: the next tick tries again.
      }
    }, everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The command prefix: the rest runs (exec'd, same PID) with this file as its /etc/hosts. */
  get wrap(): string[] {
    return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', this.file];
  }
}
