import { createPublicKey } from 'node:crypto';
import type { Expected, KeylessPolicy, SignaturePolicy, TrustedKey } from '../../../oci/signature-policy.ts';
import { trustFromRoot } from '../../../oci/trusted-root.ts';
import type { DiskSource, ResolvedDisk } from '../../../oci/disk-source.ts';
import { OciError } from '../../../oci/errors.ts';
import { KupenstackError } from '../../errors.ts';
import type { ImageVerify } from '../../model/kinds.generated.ts';
import type { Manifest } from '../../model/manifest.ts';
import { describeSecret, type SecretKey } from '../../secrets/resolver.ts';
import type { AdapterContext } from '../kit/adapter.ts';

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
/** The Secret key of a keyless policy's trusted root (the file's usual name). */
const trustedRootEntry = 'trusted_root.json';

type Located = { secretRef?: { name: string }; env?: string; file?: string };

function refOf(k: Located, namespace: string, entry: string): SecretKey {
  if (k.env !== undefined) return { env: k.env };
  if (k.file !== undefined) return { file: k.file };
  return { name: k.secretRef!.name, namespace, key: entry };
}

/** What a policy's secret reference holds, read through the agent's resolver at each use (a rotated Secret applies). */
export interface PolicyReader {
  read(ref: SecretKey): Promise<string>;
  /** Where the policy sits, for messages (`file:line (spec.verify)`). */
  where: string;
}

async function trustedKey(reader: PolicyReader, policy: ImageVerify, namespace: string): Promise<TrustedKey> {
  const ref = refOf(policy.publicKey!, namespace, publicKeyEntry);
  const name = describeSecret(ref);
  const pem = await reader.read(ref);
  try {
    return { name, key: createPublicKey(pem) };
  } catch (err) {
    throw new KupenstackError(
      'image.signature',
      `${reader.where}: ${name} does not hold a PEM public key (-----BEGIN PUBLIC KEY-----, as cosign generate-key-pair writes cosign.pub)`,
      { cause: err },
    );
  }
}

function expectedOf(exact: string | undefined, regExp: string | undefined, what: string, where: string): Expected {
  if ((exact === undefined) === (regExp === undefined))
    throw new KupenstackError('image.signature', `${where}: set exactly one of keyless.${what} or keyless.${what}RegExp`);
  if (exact !== undefined) return { exact };
  try {
    new RegExp(regExp!);
  } catch (err) {
    throw new KupenstackError(
      'image.signature',
      `${where}: keyless.${what}RegExp is not a valid regular expression (${err instanceof Error ? err.message : String(err)})`,
      { cause: err },
    );
  }
  return { regExp: regExp! };
}

async function keylessOf(reader: PolicyReader, policy: ImageVerify, namespace: string): Promise<KeylessPolicy> {
  const k = policy.keyless!;
  const identity = expectedOf(k.identity, k.identityRegExp, 'identity', reader.where);
  const issuer = expectedOf(k.issuer, k.issuerRegExp, 'issuer', reader.where);
  const ref = refOf(k.trustedRoot, namespace, trustedRootEntry);
  const name = describeSecret(ref);
  let trust;
  try {
    trust = trustFromRoot(await reader.read(ref), name);
  } catch (err) {
    if (err instanceof OciError) throw new KupenstackError('image.signature', `${reader.where}: ${err.message}`, { cause: err });
    throw err;
  }
  return { name, trust, identity, issuer, transparencyLog: k.transparencyLog ?? true };
}

/** The policy as oci/ checks it: the trusted key, or the keyless signer with its trusted root. */
export async function signaturePolicy(reader: PolicyReader, policy: ImageVerify, namespace: string): Promise<SignaturePolicy> {
  if ((policy.publicKey === undefined) === (policy.keyless === undefined))
    throw new KupenstackError('image.signature', `${reader.where}: set exactly one of publicKey or keyless`);
  if (policy.keyless) return { keys: [], keyless: await keylessOf(reader, policy, namespace) };
  return { keys: [await trustedKey(reader, policy, namespace)] };
}

/** A stable name of the policy for the per-run memo: which key or which signer and root (never the secret values themselves). */
function policyKey(p: SignaturePolicy): string {
  if (p.keyless) return `keyless:${JSON.stringify([p.keyless.name, p.keyless.identity, p.keyless.issuer, p.keyless.transparencyLog])}`;
  return p.keys.map((k) => k.key.export({ type: 'spki', format: 'der' }).toString('base64')).join(',');
}

/** `file:line` of the policy in force: the manifest's spec.verify, else its source.oci (the Sync's default applies to it). */
function where(m: Manifest): string {
  const path = (m.spec as { verify?: unknown }).verify !== undefined ? ['spec', 'verify'] : ['spec', 'source', 'oci'];
  return `${m.source.file}:${m.source.position(path, 'key').line} (${path.join('.')})`;
}

/** How the policy in force reads its keys and roots: through the agent's resolver, named by the policy's place in the file. */
export function readerOf(m: Manifest, ctx: AdapterContext): PolicyReader {
  const secrets = ctx.secrets;
  return {
    where: where(m),
    read: async (ref) => {
      if (!secrets)
        throw new KupenstackError(
          'image.signature',
          `${where(m)}: the signature policy is in ${describeSecret(ref)}, but this agent reads no secrets; give it a secret resolver`,
        );
      return secrets.get(ref);
    },
  };
}

/** Throws `image.signature` (the reference and why) unless the policy is met; once per digest and key per run. */
export async function verifyResolved(m: Manifest, ctx: AdapterContext, source: DiskSource, disk: ResolvedDisk): Promise<void> {
  const policy = policyOf(m, ctx);
  if (!policy) return;
  const reader = readerOf(m, ctx);
  const checked = await signaturePolicy(reader, policy, ctx.namespace);
  if (!source.verifySignature) throw new KupenstackError('internal', `${m.address}: this image source cannot check signatures`);
  const memoKey = `Image:verify:${disk.reference}:${policyKey(checked)}`;
  try {
    await ctx.memo(memoKey, () => source.verifySignature!(disk, checked, ctx.signal));
  } catch (err) {
    if (err instanceof OciError && err.code === 'oci.signature') throw new KupenstackError('image.signature', `${where(m)}: ${err.message}`, { cause: err });
    throw err;
  }
}
