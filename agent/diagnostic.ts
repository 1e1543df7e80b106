/**
 * One problem found in a revision, positioned for a human: the file, the line
 * and column (1-based), the manifest it belongs to, the JSON path inside it,
 * and a message that says how to fix it. `code` is stable: tools match on it.
 */
export interface Diagnostic {
  code: string;
  file: string;
  line: number;
  column: number;
  kind: string;
  name: string;
  path: string;
  message: string;
}

/** Deterministic order: file, then position, then code, then message. */
export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return cmp(a.file, b.file) || a.line - b.line || a.column - b.column || cmp(a.code, b.code) || cmp(a.path, b.path) || cmp(a.message, b.message);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function formatDiagnostic(d: Diagnostic): string {
  const where = d.line > 0 ? `${d.file}:${d.line}:${d.column}` : d.file;
  const what = d.kind ? ` ${d.kind}${d.name ? `/${d.name}` : ''}` : '';
  const path = d.path ? ` at ${d.path}` : '';
  return `${where}: error [${d.code}]${what}${path}: ${d.message}`;
}
