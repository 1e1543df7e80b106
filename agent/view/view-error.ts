import { KupenstackError } from '../errors.ts';
import { ApiException } from '@kubernetes/client-node';
import { KubeApiError, kubeApiError } from '../kube/errors.ts';
import type { ApiError } from './api.ts';

const codes: Record<number, string> = { 400: 'bad-request', 401: 'unauthenticated', 403: 'forbidden', 404: 'not-found', 405: 'method-not-allowed' };

/** An answer of the view's API that is not a page: its HTTP status and a sentence for a person (never a token). */
export class ViewError extends KupenstackError {
  readonly status: number;

  constructor(status: number, message: string, options?: { cause?: unknown; code?: string }) {
    super(`view.${options?.code ?? codes[status] ?? 'internal'}`, message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
  }

  body(): ApiError {
    return { status: this.status, code: this.code.replace(/^view\./, ''), message: this.message };
  }
}

/**
 * A failed read with the person's token, as the view answers it: the API
 * server's 401/403/404 become the view's own (the 403 page names what was
 * refused), anything else a 502 naming the read.
 */
export function viewErrorOf(what: string, err: unknown): ViewError {
  if (err instanceof ViewError) return err;
  if (err instanceof KubeApiError || err instanceof ApiException) {
    err = kubeApiError(what, err);
  }
  if (err instanceof KubeApiError) {
    if (err.status === 401) return new ViewError(401, 'the API server no longer accepts your token: sign in again', { cause: err });
    if (err.status === 403) return new ViewError(403, `you may not ${what}`, { cause: err });
    if (err.status === 404) return new ViewError(404, `${what}: not found`, { cause: err });
    return new ViewError(502, `${what}: the API server answered ${err.message}`, { cause: err, code: 'upstream' });
  }
  return new ViewError(500, `${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err, code: 'internal' });
}
