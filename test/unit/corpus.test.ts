import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { checkPath } from '../../agent/validate/check-path.ts';
import { defaultLimits } from '../../agent/load/limits.ts';
import { base, cases, type CorpusCase } from '../corpus/cases.ts';

const registry = loadSchemaRegistry();
const root = mkdtempSync(join(tmpdir(), 'ks-corpus-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function materialise(c: CorpusCase, index: number): string {
  const dir = join(root, String(index));
  const files = c.alone ? c.files : { ...base, ...c.files };
  for (const [path, content] of Object.entries(files)) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    if (typeof content === 'object' && !Buffer.isBuffer(content)) symlinkSync(content.symlink, target);
    else writeFileSync(target, content);
  }
  return dir;
}

describe('the bad-input corpus', () => {
  it('has at least 40 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });

  it('the base tenant alone is valid', async () => {
    const dir = materialise({ name: 'base', files: {}, errors: [] }, -1);
    expect((await checkPath(dir, registry)).diagnostics).toEqual([]);
  });

  it.each(cases.map((c, i) => [c.name, c, i] as const))('%s', async (_name, c, i) => {
    const dir = materialise(c, i);
    const result = await checkPath(dir, registry, c.limits ?? defaultLimits);
    const got = result.diagnostics.map((d) => `${d.code} ${d.file.slice(dir.length + 1)}:${d.line}:${d.column}`);
    expect(got).toEqual(c.errors);
    // honest: how many diagnostics is asserted just above (got equals c.errors); none is a valid case.
    for (const d of result.diagnostics) {
      expect(d.message.length, `${d.code} has a message that says how to fix it`).toBeGreaterThan(20);
      expect(d.message).not.toMatch(/undefined|\[object Object\]/);
    }
  });
});

describe('kupenstack validate on bad input', () => {
  it('exits 1 and prints exactly the documented JSON shape', () => {
    const c = cases.find((x) => x.name === 'subnets of one network that overlap')!;
    const dir = materialise(c, 1000);
    const r = spawnSync(process.execPath, ['agent/cli/main.ts', 'validate', dir, '--output', 'json'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(['valid', 'documents', 'errors']);
    expect(out.valid).toBe(false);
    expect(out.documents).toBe(6);
    const errors = out.errors as Record<string, unknown>[];
    expect(errors).toHaveLength(1);
    expect(Object.keys(errors[0]!)).toEqual(['code', 'file', 'line', 'column', 'kind', 'name', 'path', 'message']);
    expect(errors[0]).toMatchObject({ code: 'subnet.overlap', file: join(dir, 'a.yaml'), line: 8, column: 9, kind: 'Subnet', name: 's2', path: 'spec.cidr' });
  });

  it('exits 1 with a text report naming file, line and column', () => {
    const c = cases.find((x) => x.name === 'gateway outside the CIDR')!;
    const dir = materialise(c, 1001);
    const r = spawnSync(process.execPath, ['agent/cli/main.ts', 'validate', dir], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain(`${join(dir, 'a.yaml')}:9:14: error [subnet.gateway-outside] Subnet/s2 at spec.gatewayIP: gateway 10.0.2.1 is outside 10.0.1.0/24`);
    expect(r.stdout).toMatch(/1 error in 6 documents\n$/);
  });

  it('exits 0 on the repo template', () => {
    const r = spawnSync(process.execPath, ['agent/cli/main.ts', 'validate', 'repo-template'], { encoding: 'utf8' });
    expect(r.stdout).toMatch(/documents valid/);
    expect(r.status).toBe(0);
  });

  it('reports a missing path as a usage error', () => {
    const r = spawnSync(process.execPath, ['agent/cli/main.ts', 'validate', join(root, 'nope')], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/no such file or folder/);
  });
});
