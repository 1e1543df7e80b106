import type { SecretWriter } from '../../secrets/resolver.ts';
import type { Generation } from './generations.ts';

/**
 * The Secrets a changed secretRef left behind: named by an older generation,
 * not by the current one, still holding one of this manifest's older
 * credentials (so a Secret another manifest has taken the name of since is
 * not counted), and KupenStack's to delete (its mark, no consent annotation:
 * one it may not delete is never counted, or every run would plan it again).
 * None until the current credential is in its own Secret: until then the old
 * Secret is what clients read.
 */
export async function formerSecrets(writer: SecretWriter, namespace: string, newestFirst: readonly Generation[], currentDelivered: boolean): Promise<string[]> {
  const [current, ...older] = newestFirst;
  if (!current || !currentDelivered) return [];
  const olderIds = new Set(older.map((g) => g.credential?.id).filter((id): id is string => id !== undefined));
  const names = new Set(older.map((g) => g.record.secret).filter((name) => name !== current.record.secret));
  const out: string[] = [];
  for (const name of names) {
    const place = { namespace, name };
    const held = (await writer.read(place))?.application_credential_id;
    if (held !== undefined && olderIds.has(held) && (await writer.owned(place, current.marker.owner))) out.push(name);
  }
  return out.sort();
}
