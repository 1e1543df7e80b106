import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// README.md's Layout table is the map of agent/: one row per folder, what it
// holds and what it may import; a folder split in parts (controller/, cli/)
// also has one sub-row per sub-folder. It stays true both ways: a folder
// without a row, a row without a folder, an import the row does not allow, or
// an allowed import that no file makes fails here.
const root = join(import.meta.dirname, '..', '..');
const agent = join(root, 'agent');

interface Row {
  /** `controller`, or `controller/syncs` for a sub-row. */
  folder: string;
  mayImport: Set<string>;
}

function layoutRows(readme: string): Row[] {
  const section = readme.slice(readme.indexOf('\n## Layout'));
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    const m = /^\| `agent\/([a-z-]+(?:\/[a-z-]+)?)\/` \|[^|]*\|([^|]*)\|$/.exec(line);
    // A sub-row that imports "as `agent/<folder>/`" describes a part of a folder the table does not split.
    if (m && !/^\s*as `/.test(m[2]!)) rows.push({ folder: m[1]!, mayImport: new Set([...m[2]!.matchAll(/`([a-z-]+(?:\/[a-z-]+)?)\/`/g)].map((x) => x[1]!)) });
  }
  return rows;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

function subFolders(dir: string): string[] {
  return readdirSync(dir).filter((e) => statSync(join(dir, e)).isDirectory());
}

const rows = layoutRows(readFileSync(join(root, 'README.md'), 'utf8'));
const topRows = rows.filter((r) => !r.folder.includes('/'));
const subRows = rows.filter((r) => r.folder.includes('/'));
/** The folders the table splits into sub-rows. */
const split = new Set(subRows.map((r) => r.folder.split('/')[0]!));

/**
 * Where a file sits, as the table names it: agent/<folder> (or oci / lib), or
 * agent/<folder>/<part> when the table splits <folder> and the file is in one
 * of its sub-folders (a file at the top of a split folder is `<folder>`);
 * undefined for the root files of agent/ and npm packages. `fine` false: the
 * top-level folder only.
 */
function placeOf(file: string, fine: boolean): string | undefined {
  const parts = relative(root, file).split('/');
  if (parts[0] !== 'agent') return parts[0];
  if (parts.length <= 2) return undefined;
  return fine && split.has(parts[1]!) && parts.length > 3 ? `${parts[1]}/${parts[2]}` : parts[1];
}

/** A row's imports into other places (folders for a row, folders and the parent's parts for a sub-row), each with one file that makes it. */
function importsOf(row: Row): Map<string, string> {
  const fine = row.folder.includes('/');
  const out = new Map<string, string>();
  for (const file of tsFiles(join(agent, row.folder))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?:[^;'"]*?\sfrom\s)?'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/g)) {
      const to = placeOf(resolve(dirname(file), (m[1] ?? m[2])!), fine);
      if (to !== undefined && to !== row.folder && !out.has(to)) out.set(to, relative(root, file));
    }
  }
  return out;
}

describe("README's Layout table is the map of agent/", () => {
  it('has one row per folder of agent/, and no row for a folder that is not there', () => {
    const folders = subFolders(agent).sort();
    expect(topRows.map((r) => r.folder).sort()).toEqual(folders);
  });

  it('has one sub-row per sub-folder of a folder it splits, and no sub-row for a sub-folder that is not there', () => {
    const want = [...split].flatMap((f) => subFolders(join(agent, f)).map((s) => `${f}/${s}`)).sort();
    expect(subRows.map((r) => r.folder).sort()).toEqual(want);
  });

  it("says every folder another folder's files import (what it may import)", () => {
    const wrong: string[] = [];
    for (const row of rows) for (const [to, file] of importsOf(row)) if (!row.mayImport.has(to)) wrong.push(`${file} imports ${to}/, which the row of agent/${row.folder}/ does not allow`);
    expect(wrong).toEqual([]);
  });

  it('allows no import that no file makes', () => {
    const stale: string[] = [];
    for (const row of rows) {
      const made = importsOf(row);
      for (const to of row.mayImport) if (!made.has(to)) stale.push(`the row of agent/${row.folder}/ allows ${to}/, which none of its files imports`);
    }
    expect(stale).toEqual([]);
  });
});
