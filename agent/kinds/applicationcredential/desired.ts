import type { Manifest } from '../../model/manifest.ts';
import { normaliseRules, type AccessRule } from './access-rules.ts';
import { defaultGrace, normaliseTime, rotateAnnotation, rotationHash, type GenerationRecord } from './generations.ts';

/** The spec fields the kind reads, as the schema types them. */
export interface CredentialSpec {
  roles: string[];
  secretRef: { name: string };
  expiresAt?: string;
  rotateAfter?: string;
  gracePeriod?: string;
  accessRules?: AccessRule[];
  unrestricted?: boolean;
}

export function specOf(m: Manifest): CredentialSpec {
  return m.spec as unknown as CredentialSpec;
}

/** What a generation made now from this manifest records. */
export function recordOf(m: Manifest, now: number): GenerationRecord {
  const spec = specOf(m);
  return {
    made: new Date(now).toISOString(),
    rotateAfter: spec.rotateAfter ?? '',
    grace: spec.gracePeriod ?? defaultGrace,
    expiresAt: normaliseTime(spec.expiresAt),
    rotation: rotationHash(m.metadata.annotations?.[rotateAnnotation]),
    secret: spec.secretRef.name,
  };
}

/**
 * The fields the plan compares, in the shape observe reports them. A
 * credential cannot change in Keystone, so every difference is a rotation
 * (a new credential, the old one kept for the grace), not a replace:
 * `credential` must be `ok` (not missing, expired, due or lost from its
 * Secret), no older credential may outlive its grace (`pastGrace`) and no
 * Secret a changed secretRef left behind may still hold one (`formerSecrets`).
 */
export function desiredFields(m: Manifest): Record<string, unknown> {
  const r = recordOf(m, 0);
  return {
    roles: [...specOf(m).roles].sort(),
    accessRules: normaliseRules(specOf(m).accessRules),
    unrestricted: specOf(m).unrestricted === true,
    expiresAt: r.expiresAt,
    rotateAfter: r.rotateAfter,
    rotation: r.rotation,
    secretName: r.secret,
    credential: 'ok',
    pastGrace: 0,
    formerSecrets: 0,
  };
}
