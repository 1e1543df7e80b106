import { Command } from 'commander';
import { promote, type PromoteResult } from '../../oci/promote.ts';
import { parsePromoteArgs } from '../../oci/promote-plan.ts';
import { outputOption, printJson, type OutputFormat } from './output.ts';
import { byteProgress, type Progress } from './progress.ts';
import { credentialsFrom, userAgent, withRegistryOptions, type RegistryOptions } from './registry-options.ts';
import { loadVerifyPolicy } from './verify-policy.ts';

/**
 * `kupenstack image promote SRC DST`: a digest with its signatures,
 * attestations and SBOMs from one registry to another (dev → staging →
 * prod), byte for byte, verified first when asked (oci/promote.ts).
 */

interface PromoteCliOptions extends RegistryOptions {
  verify?: string;
  dryRun: boolean;
  output: OutputFormat;
  quiet: boolean;
}

export function imagePromoteCommand(): Command {
  return withRegistryOptions(
    new Command('promote')
      .description(
        'copy a VM image digest with every referrer (cosign signatures, attestations, SBOMs) to another repository or registry; the digest stays, what DST has is not copied again',
      )
      .argument('<src>', 'registry/repository:tag or registry/repository@sha256:…')
      .argument('<dst>', "registry/repository[:tag] (default tag: SRC's)"),
  )
    .option(
      '--verify <file>',
      "promote only when SRC carries a cosign signature (and the attestations) meeting this policy (the file `image import --verify` takes: what an Image's spec.verify holds); nothing is written otherwise",
    )
    .option('--dry-run', 'read both registries (and verify) and say what would be copied; write nothing', false)
    .addOption(outputOption())
    .option('-q, --quiet', 'no progress output', false)
    .action(async (srcText: string, dstText: string, opts: PromoteCliOptions) => {
      // Arguments and policy first: a typo fails before any registry is asked.
      const { src, dst } = parsePromoteArgs(srcText, dstText);
      const verify = opts.verify !== undefined ? await loadVerifyPolicy(opts.verify) : undefined;
      const credentials = credentialsFrom(opts);
      const access = { insecure: opts.insecure, client: { userAgent }, ...(credentials ? { credentials } : {}) };
      let progress: Progress | undefined;
      try {
        const result = await promote({
          src,
          dst,
          srcAccess: access,
          dstAccess: access,
          verify: verify?.signature,
          attestations: verify?.attestations,
          dryRun: opts.dryRun,
          onBytes: (copied, total) => {
            if (opts.quiet || opts.output === 'json') return;
            progress ??= byteProgress('copy');
            progress.update(copied, total);
          },
        });
        progress?.stop();
        progress = undefined;
        if (opts.output === 'json') printJson(result);
        else process.stdout.write(renderText(result));
      } finally {
        progress?.stop();
      }
    });
}

export function renderText(r: PromoteResult): string {
  const b = r.blobs;
  const [done, copied, mounted, written, set] = r.dryRun
    ? ['would promote', 'to copy', 'to mount', 'to write', 'to set']
    : ['promoted', 'copied', 'mounted', 'written', 'set'];
  const lines = [
    `${done} ${r.source} → ${r.destination}`,
    `  blobs: ${b.copied} ${copied} (${b.bytes} bytes), ${b.mounted} ${mounted}, ${b.present} present`,
    `  manifests: ${r.manifests.written} ${written}, ${r.manifests.present} present; referrers: ${r.referrers}` +
      `${r.cosignTags.length > 0 ? `; cosign tags: ${r.cosignTags.map((t) => t.slice(t.lastIndexOf('.'))).join(' ')}` : ''}`,
    ...(r.tag !== 'none' ? [`  tag: ${r.tag === 'present' ? 'already on this digest' : set}`] : []),
    ...(r.verified
      ? [
          `  verified: signed by ${r.verified.source.key} at SRC (${r.verified.source.where})${r.verified.destination ? ` and at DST (${r.verified.destination.where})` : ''}`,
        ]
      : []),
    ...(r.attested
      ? r.attested.source.map((a) => `  attested: ${a.predicateType} signed by ${a.signer} at SRC${r.attested!.destination ? ' and at DST' : ''}`)
      : []),
    `digest: ${r.digest}`,
  ];
  return `${lines.join('\n')}\n`;
}
