import type * as k8s from '@kubernetes/client-node';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { ImageRow, ImageVersion } from './api.ts';
import { eventsIfAllowed, listKind } from './kube-lists.ts';
import { conditionsOf, healthOf, iso, refsOf, type KubeObject } from './shape.ts';

interface ImageSource {
  oci?: { repository: string; tag?: string; semver?: string; digest?: string };
  url?: { url: string };
}

interface ImageStatusView {
  id?: string;
  digest?: string;
  resolvedTag?: string;
  versions?: { id?: string; digest?: string; tag?: string; createdAt?: string | Date; inUse?: boolean }[];
  transfer?: { digest?: string; bytesDone?: number; bytesTotal?: number; startedAt?: string | Date };
}

function versionsOf(st: ImageStatusView): ImageVersion[] {
  return (st.versions ?? []).map((v) => ({
    ...(v.digest ? { digest: v.digest } : {}),
    ...(v.tag ? { tag: v.tag } : {}),
    ...(v.id ? { glanceId: v.id } : {}),
    ...(v.createdAt ? { createdAt: v.createdAt instanceof Date ? v.createdAt.toISOString() : v.createdAt } : {}),
    active: v.id !== undefined && v.id === st.id,
    inUse: v.inUse === true,
  }));
}

/** What the signature check said: the Image's Events about it, else whether its spec asks for one. */
function signatureOf(o: KubeObject, events: { reason: string; message: string; object?: string }[]): string {
  const e = events.find((x) => x.object === `Image/${o.metadata.name}` && /signature|verif/i.test(`${x.reason} ${x.message}`));
  if (e) return `${e.reason}: ${e.message}`;
  if (!o.spec?.verify) return 'not required';
  return healthOf(conditionsOf(o)) === 'Ready' ? 'required; the active version passed it' : 'required';
}

/** The Images of one namespace: followed repository and tag, digest history → Glance ids, the active one, who uses it. */
export async function namespaceImages(kc: k8s.KubeConfig, registry: SchemaRegistry, namespace: string): Promise<ImageRow[]> {
  const vmPlural = registry.kinds.get('VirtualMachine')?.plural ?? 'virtualmachines';
  const [images, vms, events] = await Promise.all([
    listKind(kc, registry.kinds.get('Image')?.plural ?? 'images', namespace),
    listKind(kc, vmPlural, namespace).catch(() => []),
    eventsIfAllowed(kc, namespace),
  ]);
  return images
    .map((o): ImageRow => {
      const src = (o.spec?.source ?? {}) as ImageSource;
      const st = (o.status ?? {}) as ImageStatusView;
      const usedBy = vms
        .filter((vm) => refsOf(vm, 'VirtualMachine', registry).some((r) => r.kind === 'Image' && r.name === o.metadata.name))
        .map((vm) => ({ kind: 'VirtualMachine', namespace, name: vm.metadata.name }));
      const tag = src.oci?.tag ?? src.oci?.semver ?? src.oci?.digest;
      const startedAt = iso(st.transfer?.startedAt);
      return {
        namespace,
        name: o.metadata.name,
        source: src.oci ? `oci://${src.oci.repository}${tag ? `:${tag}` : ''}` : (src.url?.url ?? ''),
        ...(src.oci ? { repository: src.oci.repository } : {}),
        ...(tag ? { tag } : {}),
        ...(st.resolvedTag ? { resolvedTag: st.resolvedTag } : {}),
        health: healthOf(conditionsOf(o)),
        ...(st.id ? { openstackId: st.id } : {}),
        versions: versionsOf(st),
        usedBy,
        signature: signatureOf(o, events),
        ...(st.transfer ? { transfer: { ...st.transfer, startedAt: startedAt ?? '' } } : {}),
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}
