import { describe, expect, it } from 'vitest';
import type { Descriptor, Manifest } from '../../../oci/manifest.ts';
import {
  cosignTagCovered,
  cosignTags,
  mergeReferrersIndex,
  parsePromoteArgs,
  planPromotion,
  referrersTag,
  type ManifestNode,
  type SourceGraph,
} from '../../../oci/promote-plan.ts';

// The pure half of `image promote`: what the arguments mean, what is copied in which order,
// when DST's referrers-tag index and cosign tags need a write.

const d = (n: number, mediaType = 'application/octet-stream'): Descriptor => ({ mediaType, digest: `sha256:${String(n).padStart(64, '0')}`, size: n });
const manifest = (config: Descriptor, layers: Descriptor[], subject?: Descriptor): Manifest => ({
  kind: 'manifest',
  mediaType: 'application/vnd.oci.image.manifest.v1+json',
  config,
  layers,
  annotations: {},
  ...(subject ? { subject } : {}),
});
const node = (n: number, m: Manifest, tag?: string): ManifestNode => ({
  digest: d(n).digest,
  raw: Buffer.from(String(n)),
  mediaType: m.mediaType,
  manifest: m,
  ...(tag ? { tag } : {}),
});

describe('parsePromoteArgs', () => {
  it("gives DST SRC's tag when it names none", () => {
    const { src, dst } = parsePromoteArgs('127.0.0.1:5050/dev/ubuntu:24.04', '127.0.0.1:5052/prod/ubuntu');
    expect(src).toEqual({ registry: '127.0.0.1:5050', repository: 'dev/ubuntu', tag: '24.04' });
    expect(dst).toEqual({ registry: '127.0.0.1:5052', repository: 'prod/ubuntu', tag: '24.04' });
  });

  it("keeps DST's own tag, and gives no tag for a digest SRC without one", () => {
    const digest = d(1).digest;
    expect(parsePromoteArgs('127.0.0.1:5050/a:1', '127.0.0.1:5052/b:stable').dst.tag).toBe('stable');
    expect(parsePromoteArgs(`127.0.0.1:5050/a@${digest}`, '127.0.0.1:5052/b').dst).toEqual({ registry: '127.0.0.1:5052', repository: 'b' });
    expect(parsePromoteArgs('127.0.0.1:5050/a', '127.0.0.1:5052/b').dst.tag).toBe('latest');
  });

  it('refuses a DST digest and a DST that is SRC, naming the fix', () => {
    expect(() => parsePromoteArgs('127.0.0.1:5050/a:1', `127.0.0.1:5052/b@${d(1).digest}`)).toThrow(/names a digest; write a repository, optionally with :tag/);
    expect(() => parsePromoteArgs('127.0.0.1:5050/a:1', '127.0.0.1:5050/a')).toThrow(/are the same; name another repository or another tag/);
    expect(() => parsePromoteArgs('127.0.0.1:5050/a', '127.0.0.1:5050/a:latest')).toThrow(/are the same/);
    expect(parsePromoteArgs('127.0.0.1:5050/a:1', '127.0.0.1:5050/a:2').dst.tag).toBe('2');
  });

  it('refuses a malformed reference as the image commands do', () => {
    expect(() => parsePromoteArgs('http://127.0.0.1:5050/a:1', '127.0.0.1:5052/b')).toThrow(/leave out the scheme/);
    expect(() => parsePromoteArgs('127.0.0.1:5050/a:1', '127.0.0.1:5052/B')).toThrow(/not a repository name/);
  });
});

describe('cosign and referrers tags', () => {
  it('names the tags cosign and the referrers tag schema use', () => {
    const digest = `sha256:${'ab'.repeat(32)}`;
    expect(referrersTag(digest)).toBe(`sha256-${'ab'.repeat(32)}`);
    expect(cosignTags(digest)).toEqual(['sig', 'att', 'sbom'].map((s) => `sha256-${'ab'.repeat(32)}.${s}`));
  });
});

describe('planPromotion', () => {
  const config = d(2, 'application/vnd.oci.empty.v1+json');
  const disk = d(1000, 'application/vnd.diskimage.qcow2');
  const image = node(10, manifest(config, [disk]));
  const bundle = d(300, 'application/vnd.dev.sigstore.bundle.v0.3+json');
  const referrer = node(11, manifest(config, [bundle], { mediaType: image.mediaType, digest: image.digest, size: 2 }));
  const sig = node(12, manifest(d(40), [d(50)]), cosignTags(image.digest)[0]);

  it('writes every blob once, then the subject, its referrers, the cosign tags', () => {
    const referrerDescriptor = { mediaType: referrer.mediaType, digest: referrer.digest, size: 2, artifactType: bundle.mediaType };
    const graph: SourceGraph = {
      subject: [image],
      referrers: new Map([[image.digest, { descriptors: [referrerDescriptor], nodes: [referrer] }]]),
      cosignTags: [sig],
    };
    const plan = planPromotion(graph);
    expect(plan.blobs.map((b) => b.digest)).toEqual([config, disk, bundle, d(40), d(50)].map((b) => b.digest));
    expect(plan.manifests.map((m) => `${m.digest.slice(-2)} ${m.tag ?? ''}`)).toEqual(['10 ', '11 ', `12 ${sig.tag}`]);
    expect(plan.referrers.get(image.digest)).toEqual([referrerDescriptor]);
  });

  it("writes an index's children before it, and a manifest both referred to and tagged once, with its tag", () => {
    const child = node(20, manifest(config, [disk]));
    const index = node(21, { kind: 'index', mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [d(20)], annotations: {} });
    const tagged = { ...referrer, tag: cosignTags(index.digest)[1]! };
    const graph: SourceGraph = { subject: [child, index], referrers: new Map([[index.digest, { descriptors: [], nodes: [referrer] }]]), cosignTags: [tagged] };
    const plan = planPromotion(graph);
    expect(plan.manifests.map((m) => `${m.digest.slice(-2)} ${m.tag ?? ''}`)).toEqual(['20 ', '21 ', '11 ', `11 ${tagged.tag}`]);
    expect(plan.referrers.size).toBe(0);
    expect(plan.blobs.map((b) => b.digest)).toEqual([config, disk, bundle].map((b) => b.digest));
  });
});

describe('mergeReferrersIndex', () => {
  const a = { ...d(1), artifactType: 'application/vnd.dev.sigstore.bundle.v0.3+json', annotations: { x: 'y' } };
  const b = d(2);

  it("writes a new index when DST has none, listing SRC's referrers with the spec's fields", () => {
    const raw = mergeReferrersIndex(undefined, [{ ...a, platform: { architecture: 'amd64' } }]);
    expect(JSON.parse(raw!.toString('utf8'))).toEqual({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [a] });
  });

  it("adds what DST's index lacks after what it lists, and writes nothing when it lists all", () => {
    const raw = mergeReferrersIndex([b], [a, b]);
    expect((JSON.parse(raw!.toString('utf8')) as { manifests: Descriptor[] }).manifests.map((m) => m.digest)).toEqual([b.digest, a.digest]);
    expect(mergeReferrersIndex([b, a], [a])).toBeUndefined();
    expect(mergeReferrersIndex([], [])).toBeUndefined();
  });
});

describe('cosignTagCovered', () => {
  const src = manifest(d(5), [d(6)]);

  it("is covered by the same digest, or by a DST manifest holding SRC's layers and more", () => {
    expect(cosignTagCovered(src, undefined, true)).toBe(true);
    expect(cosignTagCovered(src, manifest(d(7), [d(8), d(6)]), false)).toBe(true);
  });

  it("is not covered by a DST manifest without SRC's signature layer", () => {
    expect(cosignTagCovered(src, manifest(d(5), [d(8)]), false)).toBe(false);
    expect(cosignTagCovered(src, undefined, false)).toBe(false);
  });
});
