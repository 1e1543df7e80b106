import { KupenstackError } from '../errors.ts';

/** A source is configured in a way that can never work (bad URL, bad ref, bad key): fix the configuration. */
export class SourceConfigError extends KupenstackError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('source.config', message, options);
  }
}
