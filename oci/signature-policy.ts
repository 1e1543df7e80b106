import type { KeyObject } from 'node:crypto';

/** What a signature check is given and answers (cosign-verify.ts); part of the DiskSource contract. */

export interface TrustedKey {
  /** How the user knows the key (file, Secret, variable): used in messages, never the key itself. */
  name: string;
  key: KeyObject;
}

export interface SignaturePolicy {
  keys: TrustedKey[];
}

export interface VerifiedSignature {
  /** The digest the signature covers (the image manifest's, or the index's it was picked from). */
  digest: string;
  /** Where the signature was found: `tag sha256-….sig` or `referrer sha256:…`. */
  where: string;
  key: string;
}
