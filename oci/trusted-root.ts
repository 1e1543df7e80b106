import { TrustedRoot } from '@sigstore/protobuf-specs';
import { toTrustMaterial, type TrustMaterial } from '@sigstore/verify';
import { OciError } from './errors.ts';

/**
 * Sigstore's `trusted_root.json` (what `cosign trusted-root create` writes
 * and the public-good TUF repository serves): certificate authorities,
 * transparency logs, CT logs and timestamp authorities, as the trust
 * material of @sigstore/verify. `name` says where the user put it (a file,
 * a Secret), for messages.
 */
export function trustFromRoot(text: string, name: string): TrustMaterial {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new OciError('oci.signature', `${name} is not JSON; it must hold a sigstore trusted_root.json (cosign trusted-root create)`, { cause: err });
  }
  try {
    const root = TrustedRoot.fromJSON(json);
    if (root.certificateAuthorities.length === 0) throw new Error('it names no certificate authority');
    return toTrustMaterial(root);
  } catch (err) {
    throw new OciError(
      'oci.signature',
      `${name} is not a usable sigstore trusted_root.json (${err instanceof Error ? err.message : String(err)}); make one with cosign trusted-root create --certificate-chain <your CA chain>`,
      { cause: err },
    );
  }
}
