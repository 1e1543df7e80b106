import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { image } from '../../agent/kinds/image/adapter.ts';
import { withVersions } from '../../agent/kinds/image/oci.ts';
import { markerMetadata } from '../../agent/ownership/marker.ts';

const marker = markerMetadata({ owner: 'ks', ref: 'Image/debian', specHash: 'abcd1234' });
const version = (id: string, digest: string, tag: string, createdAt: string, hidden: boolean): Record<string, unknown> => ({
  id,
  name: hidden ? `debian@${digest.slice(0, 19)}` : 'debian',
  status: 'active',
  os_hidden: hidden,
  created_at: createdAt,
  oci_manifest_digest: digest,
  oci_tag: tag,
  ...marker,
});

describe("an OCI Image's status.versions (a moved tag's history)", () => {
  const v1 = version('11111111-1111-4111-8111-111111111111', `sha256:${'1'.repeat(64)}`, 'v1', '2026-12-06T05:00:00Z', true);
  const v2 = version('22222222-2222-4222-8222-222222222222', `sha256:${'2'.repeat(64)}`, 'v1', '2026-12-06T06:00:00Z', false);

  it('lists every Glance version of the manifest, newest first, with its digest, tag and time; the current one is status.id', () => {
    const [remote] = withVersions([v1, v2]);
    expect(remote!.id).toBe(v2.id);
    expect(image.report!(remote!)).toMatchObject({
      digest: v2.oci_manifest_digest,
      resolvedTag: 'v1',
      versions: [
        { id: v2.id, digest: v2.oci_manifest_digest, tag: 'v1', createdAt: '2026-12-06T06:00:00Z' },
        { id: v1.id, digest: v1.oci_manifest_digest, tag: 'v1', createdAt: '2026-12-06T05:00:00Z' },
      ],
    });
  });

  it('reports only the fields the CRD declares for a version (its status schema has additionalProperties: false)', () => {
    const schema = JSON.parse(readFileSync(new URL('../../schemas/image.schema.json', import.meta.url), 'utf8')) as {
      properties: { status: { properties: { versions: { items: { properties: Record<string, unknown> } } } } };
    };
    const declared = Object.keys(schema.properties.status.properties.versions.items.properties);
    const [remote] = withVersions([v1, v2]);
    const reported = (image.report!(remote!).versions as Record<string, unknown>[]).flatMap((v) => Object.keys(v));
    expect(reported.length).toBeGreaterThan(0);
    expect(reported.filter((k) => !declared.includes(k))).toEqual([]);
  });

  it('a URL image reports no versions', () => {
    const [remote] = withVersions([{ id: '33333333-3333-4333-8333-333333333333', name: 'url', status: 'active', ...marker }]);
    expect(image.report!(remote!)).not.toHaveProperty('versions');
  });
});
