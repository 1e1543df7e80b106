import { crdFor, type CustomResourceDefinition } from './crd.ts';
import type { JsonSchema } from './json-schema.ts';
import type { KindInfo, SchemaRegistry } from './registry.ts';

/**
 * The NamespaceSync kind (issue 48): a tenant's own Sync, in its namespace. Not a file of schemas/ but
 * the Sync's schema with another scope: both kinds share one spec and one status (Flux has one Kustomization
 * kind too), so a field added to the Sync is a NamespaceSync's at once. A CRD's scope cannot change, so the
 * cluster-scoped Sync stays as it is and this is a second kind beside it.
 */
export const namespaceSyncKind = 'NamespaceSync';

/** What a NamespaceSync's spec may not say, refused by the API server at admission (kubectl apply, any client). */
const admissionRules = [
  {
    rule: '!has(self.serviceAccountNamespace)',
    message:
      "a NamespaceSync runs as a ServiceAccount of its own namespace: remove serviceAccountNamespace (a ServiceAccount of another namespace is the cluster admin's Sync's to use)",
  },
];

/** The NamespaceSync's kind information, derived from the Sync's. */
export function namespaceSyncInfo(registry: SchemaRegistry): KindInfo {
  const sync = registry.kinds.get('Sync');
  if (!sync) throw new Error('schema: the Sync kind is missing, the NamespaceSync is derived from it');
  const props = sync.schema.properties ?? {};
  const spec = props.spec!;
  const specProps = spec.properties ?? {};
  const schema: JsonSchema = {
    ...sync.schema,
    title: namespaceSyncKind,
    'x-kupenstack-scope': 'Namespaced',
    'x-kupenstack-plural': 'namespacesyncs',
    'x-kupenstack-shortNames': ['ksnssync'],
    description:
      "A tenant's Sync in its own namespace (Flux's namespaced Kustomization): pulls a Git repository or OCI artifact of KupenStack manifests and keeps " +
      'that namespace equal to it, as a ServiceAccount of the namespace, with Secrets of the namespace; a manifest for another namespace rejects the whole revision.',
    properties: {
      ...props,
      metadata: { $ref: 'common.schema.json#/$defs/namespacedMetadata', description: 'Name, namespace, labels and annotations.' },
      spec: {
        ...spec,
        properties: {
          ...specProps,
          serviceAccountName: {
            ...specProps.serviceAccountName,
            description:
              "The ServiceAccount of this NamespaceSync's namespace whose identity every write uses (the controller impersonates it), so its RBAC decides what the " +
              "repository may create. Default: the cluster admin's default ServiceAccount (--tenant-default-service-account), else required.",
          },
          serviceAccountNamespace: {
            ...specProps.serviceAccountNamespace,
            description: 'Refused at admission: a NamespaceSync always runs as a ServiceAccount of its own namespace.',
          },
          dependsOn: {
            ...specProps.dependsOn,
            description: 'NamespaceSyncs of the same namespace that must be Ready at their newest revision before this one applies. A cycle is refused.',
          },
        },
      },
    },
  };
  return { ...sync, kind: namespaceSyncKind, plural: 'namespacesyncs', scope: 'Namespaced', shortNames: schema['x-kupenstack-shortNames'] ?? [], schema };
}

/** The NamespaceSync's CRD: the Sync's, namespaced, with the admission rules on its spec. */
export function namespaceSyncCrd(registry: SchemaRegistry): CustomResourceDefinition {
  const crd = crdFor(namespaceSyncInfo(registry), registry);
  const spec = (crd.spec.versions[0]!.schema.openAPIV3Schema.properties as Record<string, JsonSchema>).spec!;
  const rules = (spec['x-kubernetes-validations'] ?? []) as { rule: string; message: string }[];
  spec['x-kubernetes-validations'] = [...rules, ...admissionRules];
  return crd;
}
