import { propDigest, propTag, type GlanceImage } from '../../glance/version-rules.ts';
import type { Remote } from '../kit/adapter.ts';
import { ociVersionsOf } from './oci.ts';

/** One retained version as the CRD's `status.versions` item declares it (schemas/image.schema.json). */
export interface StatusVersion {
  id: string;
  digest?: string;
  tag?: string;
  createdAt?: string;
}

/** The CRD allows at most this many; `keep` plus versions still in use stays far below it. */
const maxVersions = 128;

/**
 * The Glance images behind one OCI manifest, newest first: a moved tag's history
 * (digest → Glance id) in the object's status, so `kubectl get -o yaml` and the web
 * view show the previous version kept beside the active one (`status.id`).
 * A URL image has no versions: nothing is reported.
 */
export function statusVersions(remote: Remote): { versions?: StatusVersion[] } {
  const versions = ociVersionsOf(remote);
  if (!versions?.length) return {};
  const newestFirst = [...versions].sort((a, b) => createdAt(b).localeCompare(createdAt(a)) || a.id.localeCompare(b.id));
  return { versions: newestFirst.slice(0, maxVersions).map(statusVersion) };
}

function statusVersion(v: GlanceImage): StatusVersion {
  const digest = v[propDigest];
  const tag = v[propTag];
  return {
    id: v.id,
    ...(typeof digest === 'string' ? { digest } : {}),
    ...(typeof tag === 'string' ? { tag } : {}),
    ...(v.created_at ? { createdAt: v.created_at } : {}),
  };
}

function createdAt(v: GlanceImage): string {
  return v.created_at ?? '';
}
