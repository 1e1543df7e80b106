import { randomBytes } from 'node:crypto';
import { KupenstackError } from '../../errors.ts';
import type { Manifest } from '../../model/manifest.ts';
import { OpenStackCloud } from '../../openstack/cloud.ts';
import { withDescriptionMarker, type Marker } from '../../ownership/marker.ts';
import type { AdapterContext } from '../kit/adapter.ts';
import { keystoneExpiry, recordAttribute, type Generation } from './generations.ts';
import { accessRulesBody, normaliseRules } from './access-rules.ts';
import { recordOf, specOf } from './desired.ts';
import { secretData } from './secret.ts';

/** A role name the cloud does not know, or a credential that cannot be made as declared: fix the manifest. */
export class CredentialSpecError extends KupenstackError {
  constructor(code: 'appcred.role-unknown' | 'appcred.expires-past', message: string) {
    super(code, message);
  }
}

interface RawRole {
  id: string;
  name: string;
  domain_id?: string | null;
}

/** The namespace's project's domain: its service users live there. */
async function projectDomain(ctx: AdapterContext): Promise<string> {
  return ctx.memo(`keystone-project-domain:${ctx.projectId}`, async () => {
    const res = await ctx.cloud.identity.get<{ project: { domain_id: string } }>(`/projects/${encodeURIComponent(ctx.projectId)}`);
    return res.project.domain_id;
  });
}

/** Role names → ids, from ONE list of the cloud's global roles per run. */
export async function roleIds(ctx: AdapterContext, names: readonly string[]): Promise<string[]> {
  const all = await ctx.memo('keystone-roles', () => ctx.cloud.identity.list<RawRole>('/roles', 'roles'));
  const global = all.filter((r) => !r.domain_id);
  return names.map((name) => {
    const role = global.find((r) => r.name === name);
    if (!role) {
      const known = global
        .map((r) => r.name)
        .sort()
        .join(', ');
      throw new CredentialSpecError(
        'appcred.role-unknown',
        `spec.roles: this cloud has no role "${name}" (it has: ${known}); name one of those, or ask the cloud's admin to make it`,
      );
    }
    return role.id;
  });
}

/**
 * The Keystone name of a generation's user: a prefix of the owner's (one list finds every one of its
 * service users cloud-wide), the project's (names never collide across namespaces), the manifest's
 * and a stamp.
 */
export function serviceUserName(owner: string, projectName: string, manifestName: string, made: number): string {
  const stamp = new Date(made)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${serviceUserPrefix(owner, projectName)}${manifestName.slice(0, 60)}.${stamp}.${randomBytes(2).toString('hex')}`;
}

/** The prefix observe lists users by (Keystone's name__startswith): the owner's, or one project's of it. */
export function serviceUserPrefix(owner: string, projectName?: string): string {
  return `kupenstack.${owner}.${projectName === undefined ? '' : `${projectName}.`}`;
}

/**
 * Makes one generation: the service user (with the marker: from here on
 * observe finds it), its roles on the project, then AS that user (Keystone
 * lets only the user make its own credential) the credential, then the
 * Secret. The user's password is random, used for that one token and
 * dropped; it is never stored. A crash after the user leaves a generation
 * whose credential is `missing` or `undelivered`: the next run adopts it by
 * its marker and makes one new generation; the stranded one goes at once
 * when it has no credential, else after the grace like any older one.
 */
export async function makeGeneration(ctx: AdapterContext, m: Manifest, marker: Marker, now: number): Promise<Generation> {
  const record = recordOf(m, now);
  if (record.expiresAt && Date.parse(record.expiresAt) <= now)
    throw new CredentialSpecError(
      'appcred.expires-past',
      `spec.expiresAt ${record.expiresAt} is in the past: Keystone makes no credential that has already expired; set a later time or remove expiresAt`,
    );
  const writer = ctx.secrets?.writer;
  if (!writer)
    throw new KupenstackError(
      'appcred.no-writer',
      'this run cannot write Secrets (a plan): an ApplicationCredential is made by apply, the agent or the controller',
    );
  const place = { namespace: ctx.namespace, name: record.secret };
  // Before anything is made: a Secret that cannot be written would strand a credential nobody can ever read.
  await writer.check(place, ctx.owner);
  const spec = specOf(m);
  const roleNames = spec.roles;
  const accessRules = normaliseRules(spec.accessRules);
  const unrestricted = spec.unrestricted === true;
  const roles = await roleIds(ctx, roleNames);
  const domainId = await projectDomain(ctx);
  const password = randomBytes(32).toString('base64url');
  const created = await ctx.cloud.identity.post<{ user: { id: string } }>('/users', {
    user: {
      name: serviceUserName(ctx.owner, ctx.projectName, m.metadata.name, now),
      domain_id: domainId,
      default_project_id: ctx.projectId,
      enabled: true,
      password,
      description: withDescriptionMarker(`service user of ApplicationCredential ${ctx.namespace}/${m.metadata.name}`, marker),
      [recordAttribute]: JSON.stringify(record),
    },
  });
  const userId = created.user.id;
  for (const role of roles)
    await ctx.cloud.identity.put(`/projects/${encodeURIComponent(ctx.projectId)}/users/${encodeURIComponent(userId)}/roles/${encodeURIComponent(role)}`);
  const asUser = new OpenStackCloud(
    { ...ctx.cloud.config, name: `service user ${userId}`, credentials: { type: 'password', userId, password }, project: { id: ctx.projectId } },
    ctx.cloud.counters,
  );
  const expiresAt = keystoneExpiry(record, now);
  const res = await asUser.identity.post<{ application_credential: { id: string; secret: string; expires_at?: string | null } }>(
    `/users/${encodeURIComponent(userId)}/application_credentials`,
    {
      application_credential: {
        name: m.metadata.name.slice(0, 255),
        description: withDescriptionMarker(`KupenStack ApplicationCredential ${ctx.namespace}/${m.metadata.name}`, marker),
        roles: roles.map((id) => ({ id })),
        unrestricted,
        ...accessRulesBody(accessRules),
        ...(expiresAt ? { expires_at: expiresAt } : {}),
      },
    },
  );
  const cred = res.application_credential;
  await writer.put(place, secretData(ctx.cloud.config, cred.id, cred.secret), ctx.owner);
  const credential = { id: cred.id, roles: [...roleNames].sort(), accessRules, unrestricted, ...(cred.expires_at ? { expiresAt: cred.expires_at } : {}) };
  const gen: Generation = { userId, marker, made: now, record, credential };
  return markDelivered(ctx, gen);
}

/**
 * Records on the user that the Secret held the credential (after the write: a crash before it leaves
 * it unmarked, and the next rotation marks it first when the Secret still holds it).
 */
export async function markDelivered(ctx: AdapterContext, gen: Generation): Promise<Generation> {
  const record = { ...gen.record, delivered: true };
  await ctx.cloud.identity.call('PATCH', `/users/${encodeURIComponent(gen.userId)}`, { json: { user: { [recordAttribute]: JSON.stringify(record) } } });
  return { ...gen, record };
}

/** Deleting the user deletes its credentials with it (Keystone); gone already is done. */
export async function deleteGeneration(ctx: AdapterContext, gen: Pick<Generation, 'userId'>): Promise<void> {
  await ctx.cloud.identity.remove(`/users/${encodeURIComponent(gen.userId)}`);
}
