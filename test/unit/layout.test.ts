import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// README.md's Layout table is the map of agent/: one row per folder, what it
// holds and what it may import. It stays true: a folder without a row, a row
// without a folder, or an import the row does not allow fails here.
const root = join(import.meta.dirname, '..', '..');
const agent = join(root, 'agent');

interface Row {
  folder: string;
  mayImport: Set<string>;
}

function layoutRows(readme: string): Row[] {
  const section = readme.slice(readme.indexOf('\n## Layout'));
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    const m = /^\| `agent\/([a-z-]+)\/` \|[^|]*\|([^|]*)\|$/.exec(line);
    if (m) rows.push({ folder: m[1]!, mayImport: new Set([...m[2]!.matchAll(/`([a-z-]+)\/`/g)].map((x) => x[1]!)) });
  }
  return rows;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The folder an import lands in: agent/<folder>, or oci / lib; undefined for the root files of agent/ and npm packages. */
function folderOf(file: string): string | undefined {
  const parts = relative(root, file).split('/');
  if (parts[0] === 'agent') return parts.length > 2 ? parts[1] : undefined;
  return parts[0];
}

/** Each folder's imports into the others, read from its import and export statements. */
function importsOf(folder: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const file of tsFiles(join(agent, folder))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?:[^;'"]*?\sfrom\s)?'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g)) {
      const to = folderOf(resolve(dirname(file), (m[1] ?? m[2])!));
      if (to !== undefined && to !== folder && !out.has(to)) out.set(to, relative(root, file));
    }
  }
  return out;
}

const rows = layoutRows(readFileSync(join(root, 'README.md'), 'utf8'));

describe("README's Layout table is the map of agent/", () => {
  it('has one row per folder of agent/, and no row for a folder that is not there', () => {
    const folders = readdirSync(agent).filter((e) => statSync(join(agent, e)).isDirectory()).sort();
    expect(rows.map((r) => r.folder).sort()).toEqual(folders);
  });

  it("says every folder another folder's files import (what it may import)", () => {
    const wrong: string[] = [];
    for (const row of rows) for (const [to, file] of importsOf(row.folder)) if (!row.mayImport.has(to)) wrong.push(`${file} imports ${to}/, which the row of agent/${row.folder}/ does not allow`);
    expect(wrong).toEqual([]);
  });
});
