import { KupenstackError } from '../errors.ts';

/** A project `kupenstack export` cannot write as a namespace, and what to do about it. */
export class ExportError extends KupenstackError {
  constructor(code: 'export.project-not-found' | 'export.project-ambiguous' | 'export.namespace', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
