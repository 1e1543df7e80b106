import { createPublicKey } from 'node:crypto';
import type { TrustedKey } from '../../../oci/signature-policy.ts';
import type { DiskSource, ResolvedDisk } from '../../../oci/disk-source.ts';
import { OciError } from '../../../oci/errors.ts';
import { KupenstackError } from '../../errors.ts';
import type { ImageVerify } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';
import { describeSecret, type SecretKey } from '../../secrets/resolver.ts';
import type { AdapterContext } from '../adapter.ts';

/**
 * The signature policy of an Image (`spec.verify`, else the Sync's
 * `imageVerify` the engine hands in as ctx.imageVerify): a resolved version
 * is imported only when a cosign signature by the trusted key covers its
 * digest. Checked right after resolving, so a refused version shows in the
 * plan and nothing is made in Glance.
 */

/** The policy in force for this manifest: its own, else the Sync's default. */
export function policyOf(m: Manifest, ctx: AdapterContext): ImageVerify | undefined {
  return (m.spec as { verify?: ImageVerify }).verify ?? ctx.imageVerify;
}

/** The Secret key cosign's `generate-key-pair k8s://…` writes the public key under. */
const publicKeyEntry = 'cosign.pub';

function keyRef(policy: ImageVerify, namespace: string): SecretKey {
  const k = policy.publicKey;
  if (k.env !== undefined) return { env: k.env };
  if (k.file !== undefined) return { file: k.file };
  return { name: k.secretRef!.name, namespace, key: publicKeyEntry };
}

async function trustedKey(m: Manifest, ctx: AdapterContext, policy: ImageVerify): Promise<TrustedKey> {
  const ref = keyRef(policy, ctx.namespace);
  const name = describeSecret(ref);
  if (!ctx.secrets) throw new KupenstackError('image.signature', `${where(m)}: the signature policy's public key is in ${name}, but this agent reads no secrets; give it a secret resolver`);
  const pem = await ctx.secrets.get(ref);
  try {
    return { name, key: createPublicKey(pem) };
  } catch (err) {
    throw new KupenstackError('image.signature', `${where(m)}: ${name} does not hold a PEM public key (-----BEGIN PUBLIC KEY-----, as cosign generate-key-pair writes cosign.pub)`, { cause: err });
  }
}

/** `file:line` of the policy in force: the manifest's spec.verify, else its source.oci (the Sync's default applies to it). */
function where(m: Manifest): string {
  const path = (m.spec as { verify?: unknown }).verify !== undefined ? ['spec', 'verify'] : ['spec', 'source', 'oci'];
  return `${m.source.file}:${m.source.position(path, 'key').line} (${path.join('.')})`;
}

/** Throws `image.signature` (the reference and why) unless the policy is met; once per digest and key per run. */
export async function verifyResolved(m: Manifest, ctx: AdapterContext, source: DiskSource, disk: ResolvedDisk): Promise<void> {
  const policy = policyOf(m, ctx);
  if (!policy) return;
  const key = await trustedKey(m, ctx, policy);
  if (!source.verifySignature) throw new KupenstackError('internal', `${m.address}: this image source cannot check signatures`);
  const memoKey = `Image:verify:${disk.reference}:${key.key.export({ type: 'spki', format: 'der' }).toString('base64')}`;
  try {
    await ctx.memo(memoKey, () => source.verifySignature!(disk, { keys: [key] }, ctx.signal));
  } catch (err) {
    if (err instanceof OciError && err.code === 'oci.signature') throw new KupenstackError('image.signature', `${where(m)}: ${err.message}`, { cause: err });
    throw err;
  }
}
