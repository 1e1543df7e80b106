import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { checkPath } from '../../agent/validate/check-path.ts';
import type { ValidatedRevision } from '../../agent/validate/validate.ts';

/** The head of a manifest in namespace `t`, ending at `spec:` (the caller writes the spec lines). */
export const h = (kind: string, name: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata:\n  name: ${name}\n  namespace: t\nspec:\n`;

/** Writes documents as one file of a fresh folder and validates it like `apply` does; the folders go when the test file ends. */
export function revisionMaker(prefix: string): (docs: string[]) => Promise<ValidatedRevision> {
  const registry = loadSchemaRegistry();
  const scratch = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  let n = 0;
  return async (docs) => {
    const dir = join(scratch, `r${n++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'all.yaml'), docs.join('---\n'));
    const check = await checkPath(dir, registry);
    expect(check.diagnostics).toEqual([]);
    return check.validated;
  };
}
