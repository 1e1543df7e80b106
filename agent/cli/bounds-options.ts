import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { configureBounds, defaultBounds, formatSize, parseSize, runDeadlineExceeded, type Bounds } from '../util/bounds.ts';
import { formatDuration, isDuration, parseDuration } from '../util/duration.ts';

/** The bounds flags shared by `controller` and `agent` (util/bounds.ts); one block, each flag's default the shared-cluster default. */
export interface BoundsOptions {
  maxNamespaceImages: string;
  maxNamespaceImageBytes: string;
  maxImageBytes: string;
  maxFlavorVcpus: string;
  maxFlavorRam: string;
  maxFlavorDisk: string;
  maxFlavorEphemeral: string;
  maxFlavorSwap: string;
  maxFlavorRxtxFactor: string;
  downloadMinRate: string;
  downloadRateWindow: string;
  downloadDeadline: string;
  runDeadline: string;
  maxGitFetchBytes: string;
  maxGitBlobBytes: string;
}

const d = defaultBounds;
const size = (n: number): string => formatSize(n).replace(' ', '');
const ms = (n: number): string => (n % 3_600_000 === 0 ? `${n / 3_600_000}h` : n % 60_000 === 0 ? `${n / 60_000}m` : `${n / 1000}s`);

export function withBoundsOptions(cmd: Command, runIs: string): Command {
  return cmd
    .option(
      '--max-namespace-images <n>',
      "Glance images one namespace's Images may use (its own and the shared OCI versions it uses)",
      String(d.namespaceImages),
    )
    .option(
      '--max-namespace-image-bytes <size>',
      "their bytes, shared versions counted where they are stored (the agent's images project), e.g. 200GiB",
      size(d.namespaceImageBytes),
    )
    .option('--max-image-bytes <size>', "one image's disk, decompressed (an OCI layer may expand far beyond its size)", size(d.imageBytes))
    .option('--max-flavor-vcpus <n>', "a Flavor's vcpus in a namespace without the label kupenstack.io/admin=true", String(d.flavor.vcpus))
    .option('--max-flavor-ram <MiB>', "a Flavor's ram (MiB) in such a namespace", String(d.flavor.ram))
    .option('--max-flavor-disk <GiB>', "a Flavor's disk (GiB) in such a namespace", String(d.flavor.disk))
    .option('--max-flavor-ephemeral <GiB>', "a Flavor's ephemeral disk (GiB) in such a namespace", String(d.flavor.ephemeral))
    .option('--max-flavor-swap <MiB>', "a Flavor's swap (MiB) in such a namespace", String(d.flavor.swap))
    .option('--max-flavor-rxtx-factor <n>', "a Flavor's rxtxFactor in such a namespace", String(d.flavor.rxtxFactor))
    .option(
      '--download-min-rate <size>',
      'every download (Image URL, OCI blob) gives up when slower than this per second over --download-rate-window',
      size(d.downloadMinBytesPerSecond),
    )
    .option('--download-rate-window <duration>', 'the window over which --download-min-rate is measured', ms(d.downloadRateWindowMs))
    .option('--download-deadline <duration>', 'every download gives up after this long, however fast it goes', ms(d.downloadDeadlineMs))
    .option('--run-deadline <duration>', `${runIs} is abandoned at a safe point after this long and retried with backoff`, ms(d.runDeadlineMs))
    .option(
      '--max-git-fetch-bytes <size>',
      "a Sync's Git fetch: the pack received is refused beyond this (before it is held in memory where the server says its size)",
      size(d.gitFetchBytes),
    )
    .option('--max-git-blob-bytes <size>', "a Sync's Git fetch: any one file (blob) in the pack", size(d.gitBlobBytes));
}

/** The flags checked (a UsageError names the flag and an example) into the process's bounds. */
export function boundsFrom(o: BoundsOptions): Bounds {
  const count = (flag: string, text: string): number => {
    const n = Number(text);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} ${text}: expected a number of at least 0, e.g. 16`);
    return n;
  };
  const bytes = (flag: string, text: string): number => {
    const n = parseSize(text);
    if (n === undefined || n < 1) throw new UsageError(`${flag} ${text}: expected a size, e.g. 10GiB, 512MiB or 1048576`);
    return n;
  };
  const duration = (flag: string, text: string): number => {
    if (!isDuration(text) || parseDuration(text) < 1) throw new UsageError(`${flag} ${text}: expected a duration, e.g. 30m`);
    return parseDuration(text);
  };
  return {
    namespaceImages: count('--max-namespace-images', o.maxNamespaceImages),
    namespaceImageBytes: bytes('--max-namespace-image-bytes', o.maxNamespaceImageBytes),
    imageBytes: bytes('--max-image-bytes', o.maxImageBytes),
    flavor: {
      vcpus: count('--max-flavor-vcpus', o.maxFlavorVcpus),
      ram: count('--max-flavor-ram', o.maxFlavorRam),
      disk: count('--max-flavor-disk', o.maxFlavorDisk),
      ephemeral: count('--max-flavor-ephemeral', o.maxFlavorEphemeral),
      swap: count('--max-flavor-swap', o.maxFlavorSwap),
      rxtxFactor: count('--max-flavor-rxtx-factor', o.maxFlavorRxtxFactor),
    },
    downloadMinBytesPerSecond: parseSize(o.downloadMinRate) ?? count('--download-min-rate', o.downloadMinRate),
    downloadRateWindowMs: duration('--download-rate-window', o.downloadRateWindow),
    downloadDeadlineMs: duration('--download-deadline', o.downloadDeadline),
    runDeadlineMs: duration('--run-deadline', o.runDeadline),
    gitFetchBytes: bytes('--max-git-fetch-bytes', o.maxGitFetchBytes),
    gitBlobBytes: bytes('--max-git-blob-bytes', o.maxGitBlobBytes),
  };
}

/** Sets the process's bounds; `exempt` names the namespaces the flavor bounds do not hold for (the controller's admin namespaces). Returns the line to log. */
export function configureBoundsFrom(b: Bounds, exempt?: (namespace: string) => boolean): string {
  configureBounds(b, exempt);
  return (
    `bounds: ${b.namespaceImages} images and ${formatSize(b.namespaceImageBytes)} per namespace, ${formatSize(b.imageBytes)} per image; ` +
    `downloads at least ${formatSize(b.downloadMinBytesPerSecond)}/s, at most ${formatDuration(b.downloadDeadlineMs)}; runs at most ${formatDuration(b.runDeadlineMs)}; ` +
    `Git fetches at most ${formatSize(b.gitFetchBytes)} (${formatSize(b.gitBlobBytes)} per file)`
  );
}

/** The controller's run deadline: the namespace named in the error. */
export function runDeadlineOf(b: Bounds): { ms: number; error: (namespace: string) => Error } {
  return { ms: b.runDeadlineMs, error: (ns) => runDeadlineExceeded(`namespace ${ns}`, b.runDeadlineMs) };
}
