import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { chartMemberPolicy, kustomizeMemberPolicy } from '../policy/admission.ts';
import { crdFor } from './crd.ts';
import { packageRoot } from '../paths.ts';
import { loadSchemaRegistry, type SchemaRegistry } from './registry.ts';
import { namespaceSyncCrd } from './namespace-sync.ts';
import { typescriptFor } from './typescript.ts';

/** Every file derived from schemas/, by path relative to the package root. */
export function generatedFiles(registry: SchemaRegistry = loadSchemaRegistry()): Map<string, string> {
  const files = new Map<string, string>();
  files.set('agent/model/kinds.generated.ts', typescriptFor(registry));
  // The NamespaceSync is the Sync's schema namespaced (namespace-sync.ts), generated from the same file.
  const crds = [...registry.kinds.values()].map((info) => ({ file: info.file, crd: crdFor(info, registry) }));
  crds.push({ file: registry.kinds.get('Sync')?.file ?? 'sync.schema.json', crd: namespaceSyncCrd(registry) });
  for (const { file, crd } of crds) {
    const text = `# Generated from schemas/${file} by \`npm run generate\`. Do not edit.\n${stringify(crd, { lineWidth: 0 })}`;
    files.set(`deploy/crds/${crd.metadata.name}.yaml`, text);
    // The Helm chart installs the same CRDs from its crds/ directory (Helm reads no file outside the chart).
    files.set(`deploy/chart/kupenstack/crds/${crd.metadata.name}.yaml`, text);
  }
  // The member policy's admission rules (agent/policy/admission.ts), for kustomize and the chart.
  files.set('deploy/controller/member-policy.yaml', kustomizeMemberPolicy());
  files.set('deploy/chart/kupenstack/templates/member-policy.yaml', chartMemberPolicy());
  return files;
}

// `npm run generate` writes them; the test suite checks they are up to date.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const [path, content] of generatedFiles()) {
    const target = join(packageRoot, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    console.log(`wrote ${path}`);
  }
}
