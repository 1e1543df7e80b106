import type { AttestationRequirement, VerifiedAttestation } from './attestation-policy.ts';
import { verifyAttestations } from './attestation-verify.ts';
import { copyBlob, type BlobCopy } from './blob-copy.ts';
import { clientFor, header, type RegistryAccess, type RegistryClient } from './client.ts';
import { verifyCosign } from './cosign-verify.ts';
import { OciError } from './errors.ts';
import { fetchManifest, headManifest, pullScope, type Descriptor } from './manifest.ts';
import { ociIndex } from './media-types.ts';
import {
  blobsOf,
  cosignTagCovered,
  cosignTags,
  mergeReferrersIndex,
  planPromotion,
  referrersTag,
  type ManifestNode,
  type PromotePlan,
  type SourceGraph,
} from './promote-plan.ts';
import { formatReference, type Reference } from './reference.ts';
import { listReferrers } from './referrers.ts';
import type { SignaturePolicy, VerifiedSignature } from './signature-policy.ts';
import { blobExists, putManifest } from './upload.ts';

/**
 * `kupenstack image promote SRC DST`: the manifest SRC names, its children,
 * every referrer of its digest (OCI 1.1 `subject`, through the referrers API
 * or the `sha256-<hex>` tag schema) and cosign's `.sig`/`.att`/`.sbom` tags,
 * with all their blobs, copied to DST byte for byte (the digest stays). It
 * reads everything (and verifies SRC's signature and attestations when
 * asked) before it
 * writes anything; DST's tag is written last. What DST has already is not
 * written again, so a second run writes nothing.
 */

export interface PromoteOptions {
  src: Reference;
  dst: Reference;
  srcAccess: RegistryAccess;
  dstAccess: RegistryAccess;
  /** Verify SRC's cosign signature with this policy before anything is written (and DST's after). */
  verify?: SignaturePolicy | undefined;
  /** Attestations SRC's digest must carry, checked before anything is written (and at DST after). */
  attestations?: AttestationRequirement[] | undefined;
  signal?: AbortSignal;
  /** Read both sides (and verify) but write nothing: the counts say what a run would copy. */
  dryRun?: boolean;
  /** Bytes copied so far, of at most `total` (the blobs DST may lack). */
  onBytes?: (copied: number, total: number) => void;
}

export interface PromoteResult {
  digest: string;
  /** SRC and DST as written, each with the digest. */
  source: string;
  destination: string;
  blobs: { copied: number; mounted: number; present: number; bytes: number };
  manifests: { written: number; present: number };
  /** DST's tag: written now, or already on this digest (or none was asked). */
  tag: 'written' | 'present' | 'none';
  /** Referrers of the digest (and of an index's children) found at SRC. */
  referrers: number;
  /** cosign tags found at SRC (`sha256-<hex>.sig`, …). */
  cosignTags: string[];
  verified?: { source: VerifiedSignature; destination?: VerifiedSignature };
  attested?: { source: VerifiedAttestation[]; destination?: VerifiedAttestation[] };
  /** Nothing was written: the counts are what a run would do. */
  dryRun?: true;
}

interface Ends {
  src: RegistryClient;
  srcRepo: string;
  dst: RegistryClient;
  dstRepo: string;
  signal: AbortSignal | undefined;
}

export async function promote(options: PromoteOptions): Promise<PromoteResult> {
  const { src, dst, signal } = options;
  const ends: Ends = {
    src: clientFor(src.registry, options.srcAccess),
    srcRepo: src.repository,
    dst: clientFor(dst.registry, options.dstAccess),
    dstRepo: dst.repository,
    signal,
  };
  const top = await readNode(ends.src, ends.srcRepo, src.digest ?? src.tag ?? 'latest', signal);
  const source = `${src.registry}/${src.repository}${src.tag !== undefined ? `:${src.tag}` : ''}@${top.digest}`;
  const sourceSignature = options.verify ? await verifySource(ends, source, top, options.verify) : undefined;
  const required = options.attestations ?? [];
  const sourceAttested = required.length > 0 ? await attestedSource(ends, source, top, required) : undefined;
  const plan = planPromotion(await readGraph(ends, top));
  const state = await readDestination(ends, plan, dst.tag, top.digest);
  const destination = `${formatReference(dst)}@${top.digest}`;
  const result = await stopped(destination, async () => {
    const written = await write(ends, plan, state, options);
    if (state.tagPresent === false && options.dryRun !== true) await putManifest(ends.dst, ends.dstRepo, dst.tag!, top.raw, top.mediaType, signal);
    return written;
  });
  const verified =
    sourceSignature && options.dryRun !== true
      ? { source: sourceSignature, destination: await verifySigned(ends.dst, ends.dstRepo, destination, top, options.verify!, signal) }
      : sourceSignature && { source: sourceSignature };
  const attested =
    sourceAttested && options.dryRun !== true
      ? { source: sourceAttested, destination: await verifyAttestations(ends.dst, ends.dstRepo, destination, subjectsOf(top), required, signal) }
      : sourceAttested && { source: sourceAttested };
  return {
    digest: top.digest,
    source,
    destination,
    ...result,
    tag: state.tagPresent === undefined ? 'none' : state.tagPresent ? 'present' : 'written',
    referrers: [...plan.referrers.values()].reduce((n, l) => n + l.length, 0),
    cosignTags: plan.manifests.flatMap((m) => (m.tag ? [m.tag] : [])),
    ...(verified ? { verified } : {}),
    ...(attested ? { attested } : {}),
    ...(options.dryRun === true ? { dryRun: true as const } : {}),
  };
}

/** A write that fails says what DST holds then: its tag not moved (it is written last); a rerun goes on where this one stopped. */
async function stopped<T>(destination: string, writes: () => Promise<T>): Promise<T> {
  try {
    return await writes();
  } catch (err) {
    if (!(err instanceof OciError)) throw err;
    throw new OciError(
      err.code,
      `${err.message}. The promotion to ${destination} stopped before its tag was set (the tag still names what it named before); fix that and run it again: what DST has is not copied twice`,
      { cause: err },
    );
  }
}

/** A failed check names SRC, why, and the fix; nothing has been written at that point. */
async function verifySource(ends: Ends, source: string, top: ManifestNode, policy: SignaturePolicy): Promise<VerifiedSignature> {
  try {
    return await verifySigned(ends.src, ends.srcRepo, source, top, policy, ends.signal);
  } catch (err) {
    if (!(err instanceof OciError) || err.code !== 'oci.signature') throw err;
    throw new OciError(
      'oci.signature',
      `${err.message}. Nothing was written to ${ends.dst.registry}/${ends.dstRepo}: promote an image signed by a key of the --verify policy, or sign ${source} with it`,
      { cause: err },
    );
  }
}

/** The digests an attestation may be about: the index's own, or one of its manifests' (a builder attests either). */
const subjectsOf = (top: ManifestNode): string[] => [top.digest, ...(top.manifest.kind === 'index' ? top.manifest.manifests.map((m) => m.digest) : [])];

/** Every required attestation at SRC, before anything is written; a refusal names what is missing and the fix. */
async function attestedSource(ends: Ends, source: string, top: ManifestNode, required: AttestationRequirement[]): Promise<VerifiedAttestation[]> {
  try {
    return await verifyAttestations(ends.src, ends.srcRepo, source, subjectsOf(top), required, ends.signal);
  } catch (err) {
    if (!(err instanceof OciError) || err.code !== 'oci.attestation') throw err;
    throw new OciError(
      'oci.attestation',
      `${err.message}. Nothing was written to ${ends.dst.registry}/${ends.dstRepo}: attest ${source} as the --verify policy requires (cosign attest), or promote a digest that is`,
      { cause: err },
    );
  }
}

/**
 * The digest's own signature, or, for an index not signed as a whole, one on
 * each of its manifests (`cosign sign --recursive` signs both; a signed child
 * alone does not vouch for its siblings). The index's refusal is the one told.
 */
async function verifySigned(
  client: RegistryClient,
  repository: string,
  reference: string,
  top: ManifestNode,
  policy: SignaturePolicy,
  signal: AbortSignal | undefined,
): Promise<VerifiedSignature> {
  try {
    return await verifyCosign(client, repository, reference, [top.digest], policy, signal);
  } catch (err) {
    if (top.manifest.kind !== 'index' || top.manifest.manifests.length === 0 || !(err instanceof OciError) || err.code !== 'oci.signature') throw err;
    const children: VerifiedSignature[] = [];
    for (const child of top.manifest.manifests) {
      children.push(
        await verifyCosign(client, repository, `${reference} (manifest ${child.digest})`, [child.digest], policy, signal).catch(() => Promise.reject(err)),
      );
    }
    return children[0]!;
  }
}

async function readNode(client: RegistryClient, repository: string, reference: string, signal: AbortSignal | undefined, tag?: string): Promise<ManifestNode> {
  const m = await fetchManifest(client, repository, reference, signal);
  return { digest: m.digest, raw: m.raw, mediaType: m.manifest.mediaType, manifest: m.manifest, ...(tag !== undefined ? { tag } : {}) };
}

/** A manifest and, when it is an index, its children (depth first, children before their index). */
async function readClosure(ends: Ends, top: ManifestNode, depth = 0): Promise<ManifestNode[]> {
  if (top.manifest.kind !== 'index') return [top];
  if (depth > 4) throw new OciError('oci.format', `${ends.src.registry}/${ends.srcRepo}@${top.digest}: indexes nested deeper than 4; not promoted`);
  const out: ManifestNode[] = [];
  for (const child of top.manifest.manifests) {
    out.push(...(await readClosure(ends, await readNode(ends.src, ends.srcRepo, child.digest, ends.signal), depth + 1)));
  }
  out.push(top);
  return out;
}

/**
 * Everything to copy, read at SRC: the subject's closure, then, for each of
 * its digests and of its referrers' (an SBOM's signature; 3 levels at most),
 * the referrers and cosign's tags.
 */
async function readGraph(ends: Ends, top: ManifestNode): Promise<SourceGraph> {
  const subject = await readClosure(ends, top);
  const graph: SourceGraph = { subject, referrers: new Map(), cosignTags: [] };
  let level = subject;
  for (let depth = 0; depth < 3 && level.length > 0; depth++) {
    const next: ManifestNode[] = [];
    for (const node of level) {
      if (graph.referrers.has(node.digest)) continue;
      const descriptors = await listReferrers(ends.src, ends.srcRepo, node.digest, ends.signal ? { signal: ends.signal } : {});
      const nodes: ManifestNode[] = [];
      for (const d of descriptors) nodes.push(...(await readClosure(ends, await readNode(ends.src, ends.srcRepo, d.digest, ends.signal))));
      graph.referrers.set(node.digest, { descriptors, nodes });
      next.push(...nodes);
      for (const tag of cosignTags(node.digest)) {
        const tagged = await readOptional(ends.src, ends.srcRepo, tag, ends.signal);
        if (tagged) graph.cosignTags.push(...(await readClosure(ends, { ...tagged, tag })));
      }
    }
    level = next;
  }
  return graph;
}

async function readOptional(client: RegistryClient, repository: string, tag: string, signal: AbortSignal | undefined): Promise<ManifestNode | undefined> {
  try {
    return await readNode(client, repository, tag, signal);
  } catch (err) {
    if (err instanceof OciError && err.code === 'oci.not-found') return undefined;
    throw err;
  }
}

/** What DST holds already, read before anything is written. */
interface DestinationState {
  /** Manifest digests DST has. */
  present: Set<string>;
  /**
   * Per cosign tag: `write` (DST lacks it), `present` (same digest), or
   * `covered` (DST's manifest holds SRC's signatures and more: left as it is).
   */
  tags: Map<string, 'write' | 'present' | 'covered'>;
  /** Referrers-tag indexes (DST has no referrers API), by tag: the bytes to write, or undefined when DST's lists all already. */
  indexes: Map<string, Buffer | undefined>;
  /** DST's tag on the digest already; undefined when no tag is asked. */
  tagPresent: boolean | undefined;
}

async function readDestination(ends: Ends, plan: PromotePlan, tag: string | undefined, digest: string): Promise<DestinationState> {
  const { dst, dstRepo, signal } = ends;
  const state: DestinationState = { present: new Set(), tags: new Map(), indexes: new Map(), tagPresent: undefined };
  for (const node of plan.manifests) {
    if ((await headManifest(dst, dstRepo, node.digest, signal)) !== null) state.present.add(node.digest);
    if (node.tag !== undefined) state.tags.set(node.tag, await cosignTagState(ends, node, node.tag));
  }
  if (plan.referrers.size > 0 && !(await hasReferrersApi(dst, dstRepo, digest, signal))) {
    for (const [subject, wanted] of plan.referrers) {
      const existing = await readOptional(dst, dstRepo, referrersTag(subject), signal);
      state.indexes.set(referrersTag(subject), mergeReferrersIndex(existing?.manifest.kind === 'index' ? existing.manifest.manifests : undefined, wanted));
    }
  }
  if (tag !== undefined) state.tagPresent = (await headManifest(dst, dstRepo, tag, signal))?.digest === digest;
  return state;
}

/** A cosign tag at DST: absent, the same, or holding SRC's signatures and more; anything else is refused before any write. */
async function cosignTagState(ends: Ends, node: ManifestNode, tag: string): Promise<'write' | 'present' | 'covered'> {
  const { dst, dstRepo, signal } = ends;
  const there = await headManifest(dst, dstRepo, tag, signal);
  if (there === null) return 'write';
  if (there.digest === node.digest) return 'present';
  if (cosignTagCovered(node.manifest, (await fetchManifest(dst, dstRepo, tag, signal)).manifest, false)) return 'covered';
  throw new OciError(
    'oci.registry',
    `${dst.registry}/${dstRepo}:${tag} holds ${there.digest}, which lacks signatures SRC's ${node.digest} has; nothing was written. ` +
      `Delete that tag at DST (cosign clean) or promote to another repository`,
  );
}

/** An OCI 1.1 registry answers the referrers route with an index; 2.8 and others 404 (then the tag schema is the client's to keep). */
async function hasReferrersApi(client: RegistryClient, repository: string, digest: string, signal: AbortSignal | undefined): Promise<boolean> {
  const res = await client.send('GET', `/v2/${repository}/referrers/${digest}`, {
    scopes: [pullScope(repository)],
    headers: { accept: ociIndex },
    signal,
    accept: (s) => s === 200 || s === 404 || s === 400 || s === 405,
  });
  await res.body.dump();
  return res.status === 200 && (header(res, 'content-type') ?? '').startsWith(ociIndex);
}

async function write(
  ends: Ends,
  plan: PromotePlan,
  state: DestinationState,
  options: Pick<PromoteOptions, 'onBytes' | 'dryRun'>,
): Promise<Pick<PromoteResult, 'blobs' | 'manifests'>> {
  const { dst, dstRepo, signal } = ends;
  const blobs = { copied: 0, mounted: 0, present: 0, bytes: 0 };
  const counted: Record<BlobCopy, () => void> = { present: () => blobs.present++, mounted: () => blobs.mounted++, copied: () => blobs.copied++ };
  const used = usedBlobs(plan, state);
  const total = used.reduce((n, b) => n + b.size, 0);
  for (const blob of used) {
    if (options.dryRun === true) {
      const how = await wouldCopy(ends, blob);
      counted[how]();
      if (how === 'copied') blobs.bytes += blob.size;
      continue;
    }
    const how = await copyBlob({ client: ends.src, repository: ends.srcRepo }, { client: dst, repository: dstRepo }, blob, {
      ...(signal ? { signal } : {}),
      onBytes: (n) => {
        blobs.bytes += n;
        options.onBytes?.(blobs.bytes, total);
      },
    });
    counted[how]();
  }
  const manifests = { written: 0, present: 0 };
  for (const node of plan.manifests) {
    const there = node.tag === undefined ? (state.present.has(node.digest) ? 'present' : 'write') : state.tags.get(node.tag);
    if (there === 'covered') continue;
    if (there === 'present') {
      manifests.present++;
      continue;
    }
    if (options.dryRun !== true) await putManifest(dst, dstRepo, node.tag ?? node.digest, node.raw, node.mediaType, signal);
    manifests.written++;
  }
  for (const [tag, raw] of state.indexes) {
    if (!raw) {
      manifests.present++;
      continue;
    }
    if (options.dryRun !== true) await putManifest(dst, dstRepo, tag, raw, ociIndex, signal);
    manifests.written++;
  }
  return { blobs, manifests };
}

/** What copyBlob would do, found with one HEAD (a mount is assumed to work on the same registry). */
async function wouldCopy(ends: Ends, blob: Descriptor): Promise<BlobCopy> {
  if (await blobExists(ends.dst, ends.dstRepo, blob.digest, ends.signal)) return 'present';
  return ends.src.registry === ends.dst.registry ? 'mounted' : 'copied';
}

/** The blobs of the manifests that will be written or are there; a cosign tag DST covers already needs none of SRC's. */
function usedBlobs(plan: PromotePlan, state: DestinationState): Descriptor[] {
  const kept = plan.manifests.filter((m) => m.tag === undefined || state.tags.get(m.tag) !== 'covered');
  if (kept.length === plan.manifests.length) return plan.blobs;
  const needed = new Set(kept.flatMap((m) => blobsOf(m.manifest).map((b) => b.digest)));
  return plan.blobs.filter((b) => needed.has(b.digest));
}
