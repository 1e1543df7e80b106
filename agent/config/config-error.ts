import { KupenstackError } from '../errors.ts';

/** kupenstack.yaml is wrong: the message names the file, the line and the key, and how to fix it. */
export class ConfigError extends KupenstackError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('config', message, options);
  }
}
