import { describe, expect, it } from 'vitest';
import { renderText } from '../../agent/cli/image-promote.ts';
import type { PromoteResult } from '../../oci/promote.ts';

// How `kupenstack image promote` reports a run: what was copied, what DST had, and a dry run's "would".

const digest = `sha256:${'c'.repeat(64)}`;
const base: PromoteResult = {
  digest,
  source: `127.0.0.1:5050/dev/vm:1@${digest}`,
  destination: `127.0.0.1:5052/prod/vm:1@${digest}`,
  blobs: { copied: 0, mounted: 0, present: 7, bytes: 0 },
  manifests: { written: 0, present: 5 },
  tag: 'present',
  referrers: 1,
  cosignTags: [`sha256-${'c'.repeat(64)}.sig`, `sha256-${'c'.repeat(64)}.att`],
};

describe('image promote text output', () => {
  it('says a second run wrote nothing: 0 blobs copied, N present', () => {
    expect(renderText(base)).toBe(
      [
        `promoted ${base.source} → ${base.destination}`,
        '  blobs: 0 copied (0 bytes), 0 mounted, 7 present',
        '  manifests: 0 written, 5 present; referrers: 1; cosign tags: .sig .att',
        '  tag: already on this digest',
        `digest: ${digest}`,
        '',
      ].join('\n'),
    );
  });

  it('says what a dry run would do, and where the signature was verified', () => {
    const verified = { digest, where: `tag sha256-${'c'.repeat(64)}.sig`, key: 'file cosign.pub' };
    const text = renderText({
      ...base,
      blobs: { copied: 2, mounted: 0, present: 5, bytes: 1024 },
      tag: 'written',
      dryRun: true,
      verified: { source: verified },
    });
    expect(text).toContain(`would promote ${base.source}`);
    expect(text).toContain('  blobs: 2 to copy (1024 bytes), 0 to mount, 5 present');
    expect(text).toContain('  tag: to set');
    expect(text).toContain(`  verified: signed by file cosign.pub at SRC (tag sha256-${'c'.repeat(64)}.sig)\n`);
  });
});
