import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { KupenstackError } from '../../errors.ts';
import type { VirtualMachineSpec } from '../../model/kinds.generated.ts';
import { describeSecret } from '../../secrets/resolver.ts';
import { lookedUpId, type AdapterContext } from '../kit/adapter.ts';
import type { Nic } from './shapes.ts';

/** What a VirtualMachine manifest asks Nova for: user data, NICs, the boot volume, as request bodies and as plan fields. */

/**
 * Base64 user data, as Nova takes it: inline, or read through the context's
 * SecretResolver (the manifest's namespace, default key `userData`). Offline
 * (plan --base) a secret stands for itself: the same reference, the same value.
 */
export async function userData(spec: VirtualMachineSpec, ctx: AdapterContext): Promise<string | undefined> {
  const ref = spec.userDataSecretRef;
  if (ref) {
    const key = { name: ref.name, namespace: ctx.namespace, key: ref.key ?? 'userData' };
    if (ctx.offline) return Buffer.from(lookedUpId(`user data of ${describeSecret(key)}`), 'utf8').toString('base64');
    if (!ctx.secrets)
      throw new KupenstackError(
        'vm.user-data-secret',
        `spec.userDataSecretRef: ${describeSecret(key)} cannot be read here (no secret resolver); put the user data in spec.userData`,
      );
    return Buffer.from(await ctx.secrets.get(key), 'utf8').toString('base64');
  }
  return spec.userData === undefined ? undefined : Buffer.from(spec.userData, 'utf8').toString('base64');
}

/** Plans show a digest, not the payload (which may be long or sensitive). */
export const digest = (data: string): string => `sha256:${createHash('sha256').update(data).digest('hex').slice(0, 16)}`;

export function desiredNics(ctx: AdapterContext, spec: VirtualMachineSpec): { nics: Nic[]; body: Record<string, string>[] } {
  const nics: Nic[] = [];
  const body: Record<string, string>[] = [];
  for (const n of spec.networks ?? []) {
    if (n.portRef) {
      const port = ctx.idOf('Port', n.portRef.name);
      nics.push({ port });
      body.push({ port });
    } else if (n.networkRef) {
      const uuid = ctx.idOf('Network', n.networkRef.name);
      nics.push({ uuid });
      body.push(n.fixedIP ? { uuid, fixed_ip: n.fixedIP } : { uuid });
    }
  }
  return { nics, body };
}

export function bootVolumeOf(ctx: AdapterContext, spec: VirtualMachineSpec): Record<string, unknown> | undefined {
  const bv = spec.bootVolume;
  if (!bv) return undefined;
  const deleteOnTermination = bv.deleteOnTermination ?? true;
  if (bv.volumeRef) return { source: 'volume', id: ctx.idOf('Volume', bv.volumeRef.name), delete_on_termination: deleteOnTermination };
  const image = bv.imageRef?.name ?? '';
  // By name, like `image`: a new version of the image replaces the server only when asked to.
  const out: Record<string, unknown> = { source: 'image', image, size: bv.size, delete_on_termination: deleteOnTermination };
  if (bv.volumeType) out.volume_type = bv.volumeType;
  if (spec.onImageUpdate === 'rebuild') out.image_id = ctx.idOf('Image', image);
  return out;
}

export function bootVolumeBody(ctx: AdapterContext, spec: VirtualMachineSpec): Record<string, unknown> | undefined {
  const bv = spec.bootVolume;
  if (!bv) return undefined;
  const out: Record<string, unknown> = { boot_index: 0, destination_type: 'volume', delete_on_termination: bv.deleteOnTermination ?? true };
  if (bv.volumeRef) return { ...out, source_type: 'volume', uuid: ctx.idOf('Volume', bv.volumeRef.name) };
  return {
    ...out,
    source_type: 'image',
    uuid: ctx.idOf('Image', bv.imageRef?.name ?? ''),
    volume_size: bv.size,
    ...(bv.volumeType ? { volume_type: bv.volumeType } : {}),
  };
}
