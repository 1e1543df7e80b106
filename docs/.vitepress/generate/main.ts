import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generatedPages } from './pages.ts';

// `npm run docs:generate`: writes the generated reference pages (the CLI, the kinds) under docs/.
const docs = join(import.meta.dirname, '../..');
for (const [path, content] of await generatedPages()) {
  mkdirSync(dirname(join(docs, path)), { recursive: true });
  writeFileSync(join(docs, path), content);
  process.stdout.write(`wrote docs/${path}\n`);
}
