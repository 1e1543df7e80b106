import { KupenstackError } from '../errors.ts';
import { where, type Manifest } from '../model/manifest.ts';

/**
 * The annotation that names a namespace's Keystone project when it is not `projectPrefix + namespace`:
 * `kupenstack export` writes it on every manifest, so a project made without KupenStack (`alpha`,
 * `Team Alpha`) is taken over under its own name whatever the prefix.
 */
export const projectAnnotation = 'kupenstack.io/project';

/**
 * Namespace → the Keystone project name its manifests name by the annotation. Two manifests of one
 * namespace naming two projects are refused at the second one's line: one namespace is one project.
 */
export function annotatedProjects(manifests: readonly Manifest[]): Map<string, string> {
  const names = new Map<string, string>();
  const first = new Map<string, Manifest>();
  for (const m of manifests) {
    const ns = m.metadata.namespace;
    const name = m.metadata.annotations?.[projectAnnotation];
    if (ns === undefined || name === undefined) continue;
    const known = names.get(ns);
    if (known !== undefined && known !== name) {
      throw new KupenstackError(
        'project.annotation-conflict',
        `${where(m, ['metadata', 'annotations', projectAnnotation])}: ${projectAnnotation} "${name}" differs from "${known}" ` +
          `at ${where(first.get(ns)!, ['metadata', 'annotations', projectAnnotation])}; ` +
          `namespace ${ns} is one Keystone project: give every manifest of it the same name`,
      );
    }
    names.set(ns, name);
    first.set(ns, m);
  }
  return names;
}

/** The Keystone project name of a namespace: the annotation's, else prefix + namespace. */
export function projectNameOf(ns: string, prefix: string, names: ReadonlyMap<string, string> | undefined): string {
  return names?.get(ns) ?? `${prefix}${ns}`;
}
