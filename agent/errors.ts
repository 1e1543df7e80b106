import { KupenstackError } from '../lib/errors.ts';

/** Base of every error KupenStack raises on purpose (defined in lib/ so oci/ can raise it too). */
export { KupenstackError };

/** The command line was wrong: exit code 1 and the message only, no stack. */
export class UsageError extends KupenstackError {
  constructor(message: string) {
    super('usage', message);
  }
}
