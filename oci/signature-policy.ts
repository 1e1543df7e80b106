import type { KeyObject } from 'node:crypto';
import type { TrustMaterial } from '@sigstore/verify';

/** What a signature check is given and answers (cosign-verify.ts); part of the DiskSource contract. */

export interface TrustedKey {
  /** How the user knows the key (file, Secret, variable): used in messages, never the key itself. */
  name: string;
  key: KeyObject;
}

/** A signer's identity or issuer as the policy wants it: exact, or a regular expression the whole value must match. */
export type Expected = { exact: string } | { regExp: string };

/** Keyless (certificate) signatures: a certificate of the trusted root naming the identity and issuer. */
export interface KeylessPolicy {
  /** Where the trusted root is (file, Secret), for messages. */
  name: string;
  trust: TrustMaterial;
  identity: Expected;
  issuer: Expected;
  /** Require a transparency-log entry and an SCT (true), or neither with the certificate valid now (false). */
  transparencyLog: boolean;
}

export interface SignaturePolicy {
  keys: TrustedKey[];
  keyless?: KeylessPolicy | undefined;
}

export interface VerifiedSignature {
  /** The digest the signature covers (the image manifest's, or the index's it was picked from). */
  digest: string;
  /** Where the signature was found: `tag sha256-….sig` or `referrer sha256:…`. */
  where: string;
  key: string;
}
