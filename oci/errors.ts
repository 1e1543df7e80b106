import { KupenstackError } from '../lib/errors.ts';

/**
 * The OCI library's own errors: stable codes of everything the registry side
 * refuses or fails at. The message names what is wrong and how to fix it; it
 * never contains a credential (registry answers are quoted only from their
 * JSON error codes). Their base, KupenstackError, is the project-wide one in
 * lib/ (oci/ imports nothing from agent/), so the CLI and the engine report
 * them like every other error.
 */
export type OciErrorCode =
  | 'oci.reference' // the reference text is malformed
  | 'oci.auth' // 401/403 after authenticating, token server refused, or credentials would leak
  | 'oci.credentials' // the docker config file cannot be used
  | 'oci.not-found' // manifest, tag or blob unknown
  | 'oci.digest' // bytes do not hash to the digest that names them
  | 'oci.format' // not a VM disk we understand, ambiguous (several disks), or malformed manifest
  | 'oci.format-mismatch' // declared disk format ≠ what the bytes show
  | 'oci.unsafe' // tar entry that is a link, escapes its directory, …
  | 'oci.truncated' // the stream ended early and the retry budget is spent
  | 'oci.too-large' // more bytes than the limit or than the descriptor says
  | 'oci.size-mismatch' // the decompressed disk is not the size an annotation states (io.kubevirt.disk.size)
  | 'oci.platform' // no manifest for the requested platform
  | 'oci.registry' // unexpected HTTP answer
  | 'oci.signature' // a signature policy applies and no signature satisfies it (unsigned, other key, other digest)
  | 'oci.attestation' // an attestation policy applies and a required attestation is absent, wrongly signed, another image's, or fails its conditions
  | 'oci.network'; // connection failed (also: https asked, the registry answered in plain HTTP)

export class OciError extends KupenstackError {
  declare readonly code: OciErrorCode;

  constructor(code: OciErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
