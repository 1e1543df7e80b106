import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import yaml from 'js-yaml';
import type { ExportedManifest, ExportedNamespace } from './export.ts';

export type ExportLayout = 'kind' | 'object';

/** The annotation act/project-names.ts reads (export/ may not import act/; test/unit/project-names.test.ts keeps the two equal). */
const projectAnnotation = 'kupenstack.io/project';

/**
 * Writes the export as a repository folder, `repo-template`'s layout: one
 * folder per namespace, one file per kind (`network.yaml`) or per object
 * (`network-app-net.yaml`). Each namespace is written as it arrives (an
 * export streams them). Every manifest names its Keystone project (annotation `kupenstack.io/project`). Returns the files written, relative to `dir`.
 */
export async function writeExport(
  dir: string,
  namespaces: Iterable<ExportedNamespace> | AsyncIterable<ExportedNamespace>,
  layout: ExportLayout,
): Promise<string[]> {
  const written: string[] = [];
  for await (const ns of namespaces) {
    await mkdir(join(dir, ns.namespace), { recursive: true });
    const files = new Map<string, ExportedManifest[]>();
    for (const m of ns.manifests) {
      const file = layout === 'kind' ? `${m.kind.toLowerCase()}.yaml` : `${m.kind.toLowerCase()}-${m.name}.yaml`;
      files.set(file, [...(files.get(file) ?? []), m]);
    }
    for (const [file, manifests] of files) {
      const head = `# Exported by kupenstack export from project ${ns.project.name} (${ns.project.id}).\n# yaml-language-server: $schema=https://kupenstack.io/schemas/v1alpha1/all.schema.json\n`;
      const body = manifests
        .map((m) =>
          yaml.dump(
            // The project by name (act/project-names.ts): apply takes it over whatever its projectPrefix, never making a new one.
            {
              apiVersion: 'kupenstack.io/v1alpha1',
              kind: m.kind,
              metadata: { name: m.name, namespace: m.namespace, annotations: { [projectAnnotation]: ns.project.name } },
              spec: m.spec,
            },
            { lineWidth: 160, noRefs: true },
          ),
        )
        .join('---\n');
      await writeFile(join(dir, ns.namespace, file), head + body);
      written.push(join(ns.namespace, file));
    }
  }
  return written;
}
