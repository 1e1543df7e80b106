import { cliReference } from './cli.ts';
import { derivedKinds, kindPage, kindSchemas, kindsIndex } from './kinds.ts';

/** Every generated page, path under docs/ → its content now: what docs:generate writes and the unit test compares. */
export async function generatedPages(): Promise<Map<string, string>> {
  const pages = new Map<string, string>([['reference/cli.md', await cliReference()], ['reference/kinds/index.md', kindsIndex()]]);
  for (const { file, kind } of kindSchemas()) pages.set(`reference/kinds/${kind.toLowerCase()}.md`, kindPage(file));
  for (const { file, kind, schema } of derivedKinds()) pages.set(`reference/kinds/${kind.toLowerCase()}.md`, kindPage(file, schema));
  return pages;
}
