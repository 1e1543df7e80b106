import { isNode, type Document, type LineCounter } from 'yaml';

/** Where a key sits in kupenstack.yaml, for messages: `kupenstack.yaml:12:5 (syncs[0].interval)`. */
export type Locate = (path: readonly (string | number)[]) => string;

/** `syncs[0].source.git`: the path as a user reads it. */
function formatKeyPath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

export function locator(file: string, doc: Document, lines: LineCounter): Locate {
  return (path) => {
    const key = formatKeyPath(path);
    // Walk down as far as the document goes, so a missing key points at its parent.
    for (let n = path.length; n >= 0; n--) {
      const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
      if (isNode(node) && node.range) {
        const { line, col } = lines.linePos(node.range[0]);
        return `${file}:${line}:${col} (${key})`;
      }
    }
    return `${file} (${key})`;
  };
}
