/** Base of every error KupenStack raises on purpose: a stable code, a message that says how to fix it, and the cause. */
export class KupenstackError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** The command line was wrong: exit code 1 and the message only, no stack. */
export class UsageError extends KupenstackError {
  constructor(message: string) {
    super('usage', message);
  }
}
