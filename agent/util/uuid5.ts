import { createHash } from 'node:crypto';

/** The UUID namespace of every id KupenStack derives (RFC 9562 version 5). */
const kupenstackNamespace = '5f0c7a52-93d1-4b8e-9a57-0c4e1d2b6a31';

/**
 * A name-based UUID (version 5, SHA-1): the same input always gives the same
 * id, so a create retried after a crash asks OpenStack for an id it already
 * holds and gets a 409 instead of a duplicate. In util/ because the kinds and
 * the Glance side (agent/glance/) both derive ids.
 */
export function uuid5(name: string, namespace = kupenstackNamespace): string {
  const hash = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
