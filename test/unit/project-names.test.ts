import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { annotatedProjects, projectAnnotation, projectNameOf } from '../../agent/act/project-names.ts';
import { writeExport } from '../../agent/export/write.ts';
import type { Manifest } from '../../agent/model/manifest.ts';

function manifest(name: string, namespace: string, project?: string): Manifest {
  return {
    apiVersion: 'kupenstack.io/v1alpha1',
    kind: 'Network',
    metadata: { name, namespace, ...(project ? { annotations: { [projectAnnotation]: project } } : {}) },
    spec: {},
    source: { file: `${namespace}/network.yaml`, index: 0, value: {}, position: () => ({ line: 4, column: 3 }) },
    address: `${namespace}/Network/${name}`,
  };
}

describe('a namespace named after its existing project (issue 46 item 5)', () => {
  it('maps a namespace to the project its manifests name, else prefix + namespace', () => {
    const names = annotatedProjects([manifest('a', 'alpha', 'alpha'), manifest('b', 'alpha'), manifest('c', 'beta')]);
    expect([...names]).toEqual([['alpha', 'alpha']]);
    expect(projectNameOf('alpha', 'ks-', names)).toBe('alpha');
    expect(projectNameOf('beta', 'ks-', names)).toBe('ks-beta');
  });

  it('refuses two projects for one namespace at the second manifest', () => {
    expect(() => annotatedProjects([manifest('a', 'alpha', 'alpha'), manifest('b', 'alpha', 'Team Alpha')])).toThrow(
      `alpha/network.yaml:4: ${projectAnnotation} "Team Alpha" differs from "alpha" at alpha/network.yaml:4; namespace alpha is one Keystone project`,
    );
  });

  it('export writes the project on every manifest', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ks-export-'));
    try {
      const files = await writeExport(
        dir,
        [{ namespace: 'alpha', project: { id: 'p1', name: 'alpha' }, manifests: [{ kind: 'Network', name: 'app', namespace: 'alpha', spec: { import: { id: 'n1', adopt: true } } }] }],
        'kind',
      );
      expect(files).toEqual(['alpha/network.yaml']);
      const doc = parse(readFileSync(join(dir, files[0]!), 'utf8')) as { metadata: unknown };
      expect(doc.metadata).toEqual({ name: 'app', namespace: 'alpha', annotations: { [projectAnnotation]: 'alpha' } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
