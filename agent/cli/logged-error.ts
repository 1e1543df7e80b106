/**
 * Errors a command already wrote to its log as its last line (the
 * controller's `fatal`): main.ts exits 1 without printing them again, so a
 * log read as JSON does not end in a line of text.
 */
const logged = new WeakSet<object>();

export function markLogged(err: unknown): void {
  if (typeof err === 'object' && err !== null) logged.add(err);
}

export function wasLogged(err: unknown): boolean {
  return typeof err === 'object' && err !== null && logged.has(err);
}
