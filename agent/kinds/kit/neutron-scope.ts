import { KupenstackError } from '../../errors.ts';
import { where, type Manifest } from '../../model/manifest.ts';
import type { AdapterContext, BulkScope } from './adapter.ts';

/**
 * What Neutron checks for a project's own create and skips for an admin one
 * (KindAdapter.bulkCreate.scope): a subnet or port only on a network of the
 * project or shared with it (OwnershipValidationHook), a port only with
 * security groups of the project or shared with it. The engine sends bulks
 * with its admin scope, so the Neutron kinds apply these rules themselves.
 */

/** How the namespace's project may use a network or security group a manifest names. */
export type Use = 'own' | 'shared' | 'foreign' | 'unknown';

const objectType = { Network: 'network', SecurityGroup: 'security_group' } as const;

/**
 * `own`: made by the agent in this project, or imported from it; `shared`: another project's, shared
 * with this one (an RBAC `access_as_shared` entry for it or for every project, read with the agent's
 * admin scope once per object and run); `foreign`: another project's, not shared; `unknown`: the
 * engine gave no imports to tell.
 */
async function useOf(ctx: AdapterContext, kind: keyof typeof objectType, name: string): Promise<Use> {
  if (!ctx.imported) return 'unknown';
  const imported = ctx.imported(kind, name);
  if (!imported || imported.raw.project_id === ctx.projectId) return 'own';
  const shared = await ctx.memo(`neutron:shared:${objectType[kind]}:${imported.id}`, async () => {
    const entries = await ctx.cloud.client('network').list<{ target_tenant?: string; target_project?: string }>('/rbac-policies', 'rbac_policies', {
      object_type: objectType[kind],
      object_id: imported.id,
      action: 'access_as_shared',
    });
    return entries.some((e) => [e.target_tenant, e.target_project].some((t) => t === '*' || t === ctx.projectId));
  });
  return shared ? 'shared' : 'foreign';
}

/**
 * The scope a create using these objects needs: `admin` only when each is the project's own (an admin
 * request is then the project's own request); `project` when one is shared (Neutron's policies on
 * another owner's network, fixed addresses for one, are judged with the project's token). Throws
 * `reference.not-shared`, naming the manifest's file:line, when one is another project's and not
 * shared: Neutron refuses that to the project, and nothing is sent.
 */
export async function scopeOfUses(
  ctx: AdapterContext,
  m: Manifest,
  uses: readonly { kind: keyof typeof objectType; name: string; path: (string | number)[] }[],
): Promise<BulkScope> {
  let scope: BulkScope = 'admin';
  for (const u of uses) {
    const use = await useOf(ctx, u.kind, u.name);
    if (use === 'foreign') {
      const id = ctx.imported?.(u.kind, u.name)?.id ?? '?';
      throw new KupenstackError(
        'reference.not-shared',
        `${where(m, u.path)}: ${m.kind} ${m.metadata.name} uses ${u.kind} ${u.name} (${id}, imported), ` +
          `which belongs to another project and is not shared with project ${ctx.projectName}; ` +
          `Neutron lets a project use only its own ${u.kind === 'Network' ? 'networks' : 'security groups'} and those shared with it, ` +
          `so nothing was created. Fix: declare the ${u.kind} in namespace ${ctx.namespace} instead of importing it, or have its owner share it with this project`,
      );
    }
    if (use !== 'own') scope = 'project';
  }
  return scope;
}
