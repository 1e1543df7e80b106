import { isMap, isScalar, isSeq, type Document, type Node } from 'yaml';
import type { Position } from '../model/manifest.ts';

/** Maps character offsets to 1-based line/column, building the line index only when first asked. */
export class LineIndex {
  private starts: number[] | undefined;
  private readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  at(offset: number): Position {
    this.starts ??= lineStarts(this.text);
    const starts = this.starts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (starts[lo] ?? 0) + 1 };
  }
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

/**
 * Position of a JSON path inside a YAML document: the deepest node that exists
 * on the path (so a missing field points at the object that lacks it), at the
 * key or at the value.
 */
export function positionIn(doc: Document, lines: LineIndex, path: readonly (string | number)[], at: 'key' | 'value' = 'value'): Position {
  let node: unknown = doc.contents;
  let keyNode: unknown;
  for (const segment of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => scalarKey(p.key) === String(segment));
      if (!pair) break;
      keyNode = pair.key;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item: unknown = node.items[segment];
      if (item === undefined) break;
      keyNode = undefined;
      node = item;
    } else {
      break;
    }
  }
  const target = at === 'key' && keyNode ? keyNode : (node ?? keyNode);
  const range = (target as Node | undefined)?.range;
  return lines.at(range ? range[0] : documentStart(doc));
}

function scalarKey(key: unknown): string | undefined {
  if (isScalar(key)) return String(key.value);
  return typeof key === 'string' ? key : undefined;
}

function documentStart(doc: Document): number {
  return doc.contents?.range?.[0] ?? doc.range?.[0] ?? 0;
}
