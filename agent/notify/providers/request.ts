import type { Notice } from '../notice.ts';

/** One HTTP request a provider makes of a notice: data, sent by the Notifier through the egress gate. */
export interface ProviderRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A target as a provider sees it: the address and the secret read at send time. */
export interface ResolvedTarget {
  url: string;
  repository?: string;
  /** The HMAC key or API token; absent when none is configured. */
  secret?: string;
}

/** A provider: undefined when it has nothing to say about this notice (a commit status for a folder's revision). */
export type Provider = (n: Notice, t: ResolvedTarget) => ProviderRequest | undefined;

export const json = { 'content-type': 'application/json' } as const;

/** The API base and a path, without doubled slashes. */
export function apiUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
