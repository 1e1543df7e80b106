import type { ServiceClient } from '../../openstack/service.ts';

/**
 * What a kind knows about turning its existing OpenStack objects back into
 * manifests (`kupenstack export`): how to list a project's objects, which of
 * them a person did not make (Neutron's own ports, the default group), and
 * the spec a person would have written — only what differs from OpenStack's
 * defaults, references by manifest name. The spec must be what `desired()`
 * reads back as the object's observed fields, so adopting it changes nothing.
 */
export interface KindExport {
  readonly kind: string;
  /** Every object of the project, in one list (plus pagination), read with the agent's admin scope. */
  list(scope: ExportScope): Promise<Record<string, unknown>[]>;
  /** Why this object is not exported (made by OpenStack for another object), or undefined. */
  skip?(raw: Record<string, unknown>, scope: ExportScope): string | undefined;
  /**
   * Why adopting this object would not be safe (what it stands on is gone), or undefined;
   * asked once every kind is listed (`scope.listed`), and may read OpenStack. Such an
   * object is left out with the reason, like a skipped one.
   */
  unsafe?(raw: Record<string, unknown>, scope: ExportScope): Promise<string | undefined>;
  /**
   * Why this kind's objects are written as observe-only imports (`managementPolicy:
   * unmanaged`) instead of adoptions: the kind has no place for an ownership marker.
   */
  readonly observeOnly?: string;
  /**
   * Why this one object is written as an observe-only import although its kind can be
   * adopted (a shape its manifest cannot say), or undefined: adopted.
   */
  observeOnlyWhy?(raw: Record<string, unknown>, scope: ExportScope): string | undefined;
  /** What the written manifest leaves out that its user should know of (a secret it must not hold), or undefined. */
  note?(raw: Record<string, unknown>): string | undefined;
  /** The spec without `import` (the exporter adds it), references through `scope.ref`. */
  spec(raw: Record<string, unknown>, scope: ExportScope): Record<string, unknown>;
}

export interface ExportScope {
  /** Neutron, Nova, Glance and Cinder with the agent's own (admin) scope. */
  network: ServiceClient;
  compute: ServiceClient;
  image: ServiceClient;
  volume: ServiceClient;
  /** Octavia with the agent's own scope; absent where the caller has none (a cloud without Octavia answers no load balancer). */
  loadBalancer?: ServiceClient;
  /** A cloud-wide answer read once for every project of the export (the flavor list, the default volume type). */
  memo<T>(key: string, load: () => Promise<T>): Promise<T>;
  projectId: string;
  /**
   * Several projects are exported: each kind is listed once cloud-wide and split by
   * project (calls per kind, not per project); one project alone keeps the
   * cheaper project filter.
   */
  cloudWide: boolean;
  /** Everything this project's export listed of a kind (a router's interface ports), raw. */
  listed(kind: string): readonly Record<string, unknown>[];
  /**
   * The manifest name that stands for an OpenStack object in this namespace: an exported
   * object's own, or an observe-only import the exporter adds (an object of another project).
   */
  ref(kind: string, id: string): string;
}

/**
 * A project's objects of a kind: `load(projectId)` filtered by the project, or,
 * in a cloud-wide export, `load(undefined)` once for every project, split by
 * the field that names the owner (`project_id`, Nova's `tenant_id`…).
 */
export async function projectItems(
  s: ExportScope,
  kind: string,
  ownerField: string,
  load: (projectId: string | undefined) => Promise<Record<string, unknown>[]>,
): Promise<Record<string, unknown>[]> {
  if (!s.cloudWide) return load(s.projectId);
  const byProject = await s.memo(`${kind}:by-project`, async () => {
    const out = new Map<string, Record<string, unknown>[]>();
    for (const raw of await load(undefined)) {
      const owner = String(raw[ownerField]);
      const mine = out.get(owner);
      if (mine) mine.push(raw);
      else out.set(owner, [raw]);
    }
    return out;
  });
  return byProject.get(s.projectId) ?? [];
}

/** A string field, or undefined when OpenStack left it empty. */
export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The user's tags (KupenStack's own never reach here: the exported objects are not ours yet). */
export function tagsOf(raw: Record<string, unknown>): string[] | undefined {
  return Array.isArray(raw.tags) && raw.tags.length > 0 ? [...(raw.tags as string[])].sort() : undefined;
}
