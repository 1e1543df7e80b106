import type { Readable } from 'node:stream';
import type { AttestationRequirement, VerifiedAttestation } from './attestation-policy.ts';
import type { SignaturePolicy, VerifiedSignature } from './signature-policy.ts';

/**
 * The contract between the registry side (`oci/`) and the Glance side
 * (the Image kind and `kupenstack image import`). The registry side finds a
 * VM disk behind a reference and streams it; the Glance side never sees
 * manifests, tar layers or compression.
 */

/** How the disk is packaged in the registry. */
export type DiskPackaging =
  /** artifactType application/vnd.kupenstack.vmimage.v1, empty config, one application/vnd.diskimage.* layer. */
  | 'kupenstack-artifact'
  /** Any other manifest with exactly one application/vnd.diskimage.* layer (Konflux, podman, bootc). */
  | 'diskimage-artifact'
  /** A plain `oras push` of a disk file (one layer, generic media type, titled). */
  | 'oras-file'
  /** A KubeVirt containerDisk: a container image whose tar layer holds disk/<file>. */
  | 'containerdisk'
  /** A KubeVirt VM export (VEP #256): one raw+zstd layer per disk, chosen by io.kubevirt.disk.name. */
  | 'kubevirt-export';

export interface Platform {
  architecture: string;
  os?: string;
  variant?: string;
}

/** What the user wrote: exactly one of tag, semver, digest. */
export interface DiskRequest {
  /** registry host[:port]/path, no scheme, no tag. */
  repository: string;
  tag?: string;
  semver?: string;
  digest?: string;
  platform?: Platform;
  /** Plain HTTP (loopback test registries, air-gapped mirrors). Default false: HTTPS with verification. */
  insecure?: boolean;
  /** The disk to take from a KubeVirt VM export with several (its io.kubevirt.disk.name). */
  disk?: string;
}

/** A request pinned to one manifest, with everything Glance needs to know before the bytes flow. */
export interface ResolvedDisk {
  /** Canonical `registry/repository@sha256:…` of the image manifest. */
  reference: string;
  repository: string;
  /** The tag that was followed (tag, or the semver winner); absent when pinned by digest. */
  tag?: string;
  /** Digest of the image manifest (after platform selection): the identity of this version. */
  manifestDigest: string;
  /** Digest of the index the platform was selected from, when there was one. */
  indexDigest?: string;
  packaging: DiskPackaging;
  /** Glance disk_format as the manifest declares it (qcow2, raw, vmdk, …); confirmed by sniffing in open(). */
  diskFormat: string;
  compression?: 'gzip' | 'zstd';
  /** The layer that carries the disk. */
  blob: { digest: string; size: number; mediaType: string };
  /** Uncompressed disk size when the manifest says it. */
  diskSize?: number;
  /** Manifest annotations, untouched. */
  annotations: Record<string, string>;
  /** Glance properties derived from io.kupenstack.vmimage.* annotations (os_distro, architecture, …, property.* pass-through). */
  properties: Record<string, string>;
  minDisk?: number;
  minRam?: number;
  /** Added by the registry side (optional, for its own open()): */
  /** Plain HTTP, as requested. */
  insecure?: boolean;
  /** Virtual size the manifest states (io.kupenstack.vmimage.disk.virtual-size), bytes. */
  virtualSize?: number;
  /** sha256 of the decompressed disk when the layer annotation states it. */
  diskDigest?: string;
  /** containerDisk: every tar layer, topmost first; the disk is the first disk/<file> found. */
  layers?: Array<{ digest: string; size: number; mediaType: string }>;
  /** The platform of the selected manifest (from the index entry, or the request). */
  platform?: Platform;
  /** False when only the bytes told the format (containerDisk, `disk.img`): diskFormat is the sniffed one. */
  formatDeclared?: boolean;
  /** Annotations that were not applied (e.g. a property.<key> outside the allow-list). */
  warnings?: string[];
  /** KubeVirt export: the disk the request named (io.kubevirt.disk.name), part of the version's identity; its size (diskSize) is checked exactly while it flows. */
  diskName?: string;
}

export interface OpenedDisk {
  /**
   * The disk bytes (decompressed, the tar entry extracted). The stream ends
   * only after the whole blob was read and its digest verified; any failure
   * (digest mismatch, truncation, sniffed format ≠ declared, unsafe qcow2,
   * unsafe tar entry, registry error after the retry budget) is emitted as an
   * error before 'end', so a consumer that forwards 'end' never completes a
   * wrong upload.
   */
  stream: Readable;
  /** The format the first bytes show (qcow2, raw, …), known before the first byte is handed out. */
  sniffedFormat: string;
  /** Bytes read from the registry so far, for counters and progress. */
  bytesFromRegistry(): number;
}

export interface DiskSource {
  resolve(request: DiskRequest, signal?: AbortSignal): Promise<ResolvedDisk>;
  open(disk: ResolvedDisk, signal?: AbortSignal): Promise<OpenedDisk>;
  /**
   * A cosign signature of the resolved manifest (or of the index it was
   * picked from) by a key the policy trusts; throws `oci.signature` naming
   * the reference and the reason. Called before anything is made in Glance.
   */
  verifySignature?(disk: ResolvedDisk, policy: SignaturePolicy, signal?: AbortSignal): Promise<VerifiedSignature>;
  /**
   * Every required in-toto attestation of the resolved manifest (or of the
   * index it was picked from), signed by its signer, about that digest and
   * meeting its conditions; throws `oci.attestation` naming each missing or
   * failing one. Called before anything is made in Glance.
   */
  verifyAttestations?(disk: ResolvedDisk, requirements: AttestationRequirement[], signal?: AbortSignal): Promise<VerifiedAttestation[]>;
}
