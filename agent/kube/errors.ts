import { ApiException } from '@kubernetes/client-node';
import { KupenstackError } from '../errors.ts';

/** No usable Kubernetes configuration: says where it looked and how to give one. */
export class KubeConfigError extends KupenstackError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('kube-config', message, options);
  }
}

/**
 * A call to the Kubernetes API failed. `status` is the HTTP status (0 when the
 * server was not reached) and `reason` the Status reason the API server gave
 * (NotFound, Forbidden, Conflict, AlreadyExists, Invalid…). The message is the
 * API server's own, which never carries the caller's credentials.
 */
export class KubeApiError extends KupenstackError {
  readonly status: number;
  readonly reason: string;

  constructor(what: string, status: number, reason: string, detail: string, options?: { cause?: unknown }) {
    super('kube-api', `${what}: ${status ? `${status} ${reason}: ` : ''}${detail}`, options);
    this.status = status;
    this.reason = reason;
  }
}

interface StatusBody {
  reason?: string;
  message?: string;
}

/** The Status object inside an ApiException's body (a JSON string in client-node 2.x). */
function statusOf(body: unknown): StatusBody {
  if (typeof body === 'string') {
    try {
      const parsed: unknown = JSON.parse(body);
      return typeof parsed === 'object' && parsed !== null ? parsed : {};
    } catch {
      return { message: body.slice(0, 500) };
    }
  }
  return typeof body === 'object' && body !== null ? body : {};
}

const reasonByStatus: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  410: 'Expired',
  422: 'Invalid',
  429: 'TooManyRequests',
};

/** Any error of a client-node call as a KubeApiError that says what was being done. */
export function kubeApiError(what: string, error: unknown): KubeApiError {
  if (error instanceof KubeApiError) return error;
  if (error instanceof ApiException) {
    const status = statusOf(error.body);
    const code = Number(error.code);
    return new KubeApiError(what, code, status.reason ?? reasonByStatus[code] ?? 'Error', status.message ?? error.message, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new KubeApiError(what, 0, 'Unreachable', message, { cause: error });
}

/** True when the error is the API server's answer with that HTTP status. */
export function isKubeStatus(error: unknown, status: number): boolean {
  return error instanceof KubeApiError ? error.status === status : error instanceof ApiException && Number(error.code) === status;
}
