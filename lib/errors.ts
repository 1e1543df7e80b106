/**
 * Base of every error KupenStack raises on purpose: a stable code, a message
 * that says how to fix it, and the cause. It lives in lib/ (below agent/ and
 * oci/) so the OCI library and the disk sniffer raise it without importing
 * the agent; agent/errors.ts re-exports it.
 */
export class KupenstackError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}
