import { describe, expect, it } from 'vitest';
import { sha256Of } from '../../../oci/digest.ts';
import { headManifest } from '../../../oci/manifest.ts';
import { ociIndex, ociManifest } from '../../../oci/media-types.ts';
import { pushDisk } from '../../../oci/push.ts';
import { listReferrers } from '../../../oci/referrers.ts';
import { listTags } from '../../../oci/tags.ts';
import { putManifest, uploadBuffer } from '../../../oci/upload.ts';
import { client, randomFile, registries, tempDir, uniqueRepo } from '../../support/oci.ts';

const plain = registries.plain;

describe('referrers and tags on distribution 2.8', () => {
  it('finds a signature referrer through the sha256-<hex> tag fallback (2.8 has no referrers API), filtered by artifactType', async () => {
    const repo = uniqueRepo('referrers');
    const c = client();
    const pushed = await pushDisk(randomFile(tempDir(), 'd.raw', 70_000), `${plain}/${repo}:1`, { insecure: true });
    const subject = await headManifest(c, repo, pushed.manifestDigest);
    const empty = await uploadBuffer(c, repo, Buffer.from('{}'));
    const sigBlob = await uploadBuffer(c, repo, Buffer.from('{"payload":"not a real signature"}'));
    const referrer = (artifactType: string): Buffer =>
      Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: ociManifest,
          artifactType,
          config: { mediaType: 'application/vnd.oci.empty.v1+json', ...empty },
          layers: [{ mediaType: 'application/jose+json', ...sigBlob }],
          subject: { mediaType: ociManifest, digest: pushed.manifestDigest, size: subject!.size },
        }),
      );
    const sig = referrer('application/vnd.cncf.notary.signature');
    const sbom = referrer('application/spdx+json');
    const sigDigest = await putManifest(c, repo, sha256Of(sig), sig, ociManifest);
    const sbomDigest = await putManifest(c, repo, sha256Of(sbom), sbom, ociManifest);
    expect(await listReferrers(c, repo, pushed.manifestDigest)).toEqual([]); // no fallback tag yet
    // What a client must do on a registry without the API: maintain the fallback index itself.
    const index = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: ociIndex,
        manifests: [
          { mediaType: ociManifest, digest: sigDigest, size: sig.length, artifactType: 'application/vnd.cncf.notary.signature' },
          { mediaType: ociManifest, digest: sbomDigest, size: sbom.length, artifactType: 'application/spdx+json' },
        ],
      }),
    );
    await putManifest(c, repo, `sha256-${pushed.manifestDigest.slice(7)}`, index, ociIndex);
    expect((await listReferrers(c, repo, pushed.manifestDigest)).map((d) => d.digest).sort()).toEqual([sigDigest, sbomDigest].sort());
    expect((await listReferrers(c, repo, pushed.manifestDigest, { artifactType: 'application/vnd.cncf.notary.signature' })).map((d) => d.digest)).toEqual([sigDigest]);
  });

  it('lists all tags sorted although 2.8 ignores n/last and answers unsorted', async () => {
    const repo = uniqueRepo('tags');
    const file = randomFile(tempDir(), 'd.raw', 70_000);
    const tags = ['t-e', 't-a', 't-d', 't-b', 't-c'];
    for (const t of tags) await pushDisk(file, `${plain}/${repo}:${t}`, { insecure: true });
    expect(await listTags(client(), repo, undefined, 2)).toEqual([...tags].sort());
  });
});
