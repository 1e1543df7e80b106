import { KupenstackError } from '../errors.ts';
import type { AdapterContext, KindAdapter, OwnershipView, Remote } from '../kinds/kit/adapter.ts';
import { where, type Manifest } from '../model/manifest.ts';
import type { OpenStackCloud } from '../openstack/cloud.ts';
import { know, type ProjectContext } from './context.ts';
import { importRefusal } from './refusals.ts';

/** What import resolution needs beyond the namespaces' contexts. */
export interface ImportJudge {
  cloud: OpenStackCloud;
  owner: string;
  adapters: ReadonlyMap<string, KindAdapter>;
  /** Namespaces labelled kupenstack.io/admin=true (the controller's): read with the agent's admin scope, no ownership asked. */
  adminNamespaces?: ReadonlySet<string>;
  /** Whether a Keystone project name is another namespace's (OwnershipView.otherProject). */
  otherProject(name: string, ctx: AdapterContext): boolean;
}

/**
 * The objects declared imports name, each known to its namespace's context; or why not. A tenant
 * namespace reads with its project's own token, so OpenStack itself hides what the project may not see
 * (a GET that 404s is import.not-found); what it does see must be the project's own to be adopted, and
 * its own or usable by it to be imported (the kind's Ownership). An admin namespace reads by id with the
 * agent's admin scope and keeps the admin's power over every project's objects. In both, an adoption
 * of an object that carries another owner's or another manifest's marker is refused: it is theirs.
 */
export async function resolveImports(
  resources: readonly Manifest[],
  scopes: ReadonlyMap<string, ProjectContext>,
  judge: ImportJudge,
): Promise<{ imports: Map<string, Remote>; importErrors: Map<string, unknown> }> {
  const imports = new Map<string, Remote>();
  const importErrors = new Map<string, unknown>();
  for (const m of resources.filter((x) => x.spec.import !== undefined)) {
    const pc = scopes.get(m.metadata.namespace!)!;
    try {
      const found = await resolveImport(m, pc, judge);
      imports.set(m.address, found);
      know(pc, `${m.kind}/${m.metadata.name}`, found);
      pc.imports.set(`${m.kind}/${m.metadata.name}`, found);
    } catch (err) {
      importErrors.set(m.address, err);
    }
  }
  return { imports, importErrors };
}

async function resolveImport(m: Manifest, pc: ProjectContext, judge: ImportJudge): Promise<Remote> {
  const spec = m.spec.import as { id?: string; filter?: Record<string, unknown>; adopt?: boolean };
  const adapter = judge.adapters.get(m.kind)!;
  const admin = judge.adminNamespaces?.has(m.metadata.namespace ?? '') === true;
  const at = where(m, ['spec', 'import']);
  let found: Remote;
  if (spec.id) {
    const read = admin ? { ...pc.ctx, apis: { ...(await judge.cloud.adminApis()), projectId: pc.ctx.projectId } } : pc.ctx;
    const got = await adapter.get?.(read, spec.id);
    if (!got)
      throw new KupenstackError(
        'import.not-found',
        `${at}: import.id ${spec.id}: no ${m.kind} with this id is visible to this namespace's project: it does not exist, or it is another project's and not shared with it; fix the id`,
      );
    found = got;
  } else {
    if (!adapter.find) throw new KupenstackError('import.unsupported', `${at}: ${m.kind} cannot be imported by filter; import it by id`);
    const matches = await adapter.find(pc.ctx, spec.filter ?? {});
    if (matches.length !== 1)
      throw new KupenstackError(
        'import.ambiguous',
        `${at}: import.filter matches ${matches.length} objects; it must match exactly one: narrow the filter or import by id`,
      );
    found = matches[0]!;
  }
  const adopt = spec.adopt === true;
  if (adopt) refuseMarked(m, found, judge.owner);
  if (!admin) await refuseForeign(m, found, pc, judge, adopt);
  return found;
}

/** An adoption of what carries a marker not this manifest's: another owner's, or another manifest's of this owner (another namespace's). */
function refuseMarked(m: Manifest, found: Remote, owner: string): void {
  const marker = found.marker;
  const ref = `${m.kind}/${m.metadata.name}`;
  if (!marker || (marker.owner === owner && marker.ref === ref)) return;
  const at = where(m, ['spec', 'import']);
  if (marker.owner !== owner)
    throw new KupenstackError(
      'adopt.owned-elsewhere',
      `${at}: ${m.kind} ${found.id} already carries the marker of owner ${marker.owner} (${marker.ref}); adopt it with that owner, or remove import.adopt`,
    );
  throw new KupenstackError(
    'import.foreign',
    `${at}: the ${m.kind} ${found.id} to adopt carries the marker of another manifest (${marker.ref}, owner ${owner}), not ${ref} of namespace ` +
      `${m.metadata.namespace}: it is that manifest's; nothing of it was changed`,
  );
}

/** What the project neither owns nor may use is refused; an adoption, anything not its own. A subnet is usable through its shared network. */
async function refuseForeign(m: Manifest, found: Remote, pc: ProjectContext, judge: ImportJudge, adopt: boolean): Promise<void> {
  const view: OwnershipView = { ctx: pc.ctx, otherProject: (name) => judge.otherProject(name, pc.ctx) };
  const adapter = judge.adapters.get(m.kind)!;
  const standing = await adapter.ownership.standing(found, view);
  if (standing.is === 'own') return;
  const refused = importRefusal({
    kind: m.kind,
    id: found.id,
    whose: standing.whose,
    projectId: pc.ctx.projectId,
    adopt,
    usable: standing.is === 'usable',
    rule: adapter.ownership.rule,
    where: where(m, ['spec', 'import']),
  });
  if (!refused) return;
  if (adopt) throw refused;
  const through = adapter.sharedThrough?.(found.raw);
  const parentAdapter = through ? judge.adapters.get(through.kind) : undefined;
  const parent = through && parentAdapter ? await parentAdapter.get?.(pc.ctx, through.id) : undefined;
  if (parent && parentAdapter && (await parentAdapter.ownership.standing(parent, view)).is !== 'foreign') return;
  throw refused;
}
