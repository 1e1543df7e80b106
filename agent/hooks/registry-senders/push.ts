import type { IncomingHttpHeaders } from 'node:http';
import { KupenstackError } from '../../errors.ts';

/**
 * What a registry's push notification says, whoever sent it: which
 * repository (on which host, when the sender names it) got which tag. One
 * parser per sender (this folder), each reading the payload its sender
 * documents; registry-hook.ts authenticates and routes.
 */

export type Sender = 'distribution' | 'harbor' | 'quay' | 'dockerhub' | 'github';

export interface RegistryPush {
  /** Registry host[:port] as the sender names it; absent when the payload does not say. */
  host?: string;
  /** Repository path inside the registry (`team/cirros`). */
  repository: string;
  /** The tag pushed; absent for a push by digest (which moves no tag). */
  tag?: string;
  digest?: string;
}

export interface RegistryDelivery {
  sender: Sender;
  /** The sender's delivery or event id, when it gives one (else the body hash is used). */
  id?: string;
  /** When the sender says the event happened (ms since the epoch). */
  at?: number;
  /** Tag pushes only: pulls, deletes, blob uploads and pushes by digest are left out. */
  pushes: RegistryPush[];
  /** The event type, for the answer to events that are not pushes. */
  event: string;
}

export interface SenderParser {
  sender: Sender;
  /** Whether these headers and this payload come from this sender. */
  recognises(headers: IncomingHttpHeaders, payload: Record<string, unknown>): boolean;
  parse(headers: IncomingHttpHeaders, payload: Record<string, unknown>): RegistryDelivery;
}

export class RegistryHookError extends KupenstackError {
  readonly status: number;

  constructor(status: number, message: string) {
    super('registry-hook', message);
    this.status = status;
  }
}

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export const record = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
export const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** `host/path/repo[:tag][@digest]` (Harbor's resource_url, Quay's docker_url, GitHub's package_url) → host and path. */
export function splitReference(ref: string): { host: string; repository: string } | undefined {
  const slash = ref.indexOf('/');
  if (slash <= 0) return undefined;
  let path = ref.slice(slash + 1).split('@')[0]!;
  const colon = path.lastIndexOf(':');
  if (colon > path.lastIndexOf('/')) path = path.slice(0, colon);
  return { host: ref.slice(0, slash), repository: path };
}
