import { parseDescriptionMarker } from '../../ownership/marker.ts';
import type { ServiceClient } from '../../openstack/service.ts';
import type { SecretResolver } from '../../secrets/resolver.ts';
import { bucket, type KindAdapter, type Remote } from '../kit/adapter.ts';
import { neverForeign } from '../kit/ownership.ts';
import { normaliseRules } from './access-rules.ts';
import { desiredFields } from './desired.ts';
import { formerSecrets } from './former-secrets.ts';
import { byAge, credentialState, normaliseTime, parseRecord, pastGrace, recordAttribute, type Generation } from './generations.ts';
import { deleteGeneration, makeGeneration, markDelivered, serviceUserPrefix } from './make.ts';

/**
 * Keystone application credentials for apps in the cloud. Keystone lets an
 * admin list and delete a user's credentials but lets only the user make
 * one, so each credential comes with a service user of its own (in the
 * project's domain, default project = the namespace's, the spec's roles on
 * it) whose random password is used once to make it and then forgotten:
 * no password is stored, and none is ever changed (a password change makes
 * Keystone revoke every token of the user). Deleting the user deletes its
 * credential.
 *
 * The marker sits in the description of both the user and the credential.
 * Observe lists the owner's service users in ONE call (by name prefix, for
 * one project or cloud-wide), then each user's credentials (one GET per
 * user: Keystone has no cloud-wide list of credentials), and reads the
 * Secret once per manifest to see that it holds the current one. The users of one manifest are its
 * generations, newest first: the newest is the object, the older ones are
 * kept until their grace ends (`raw.generations`).
 */

type RawUser = { id: string; name: string; description?: string; default_project_id?: string } & Record<string, unknown>;
type RawCredential = {
  id: string;
  name: string;
  description?: string;
  expires_at?: string | null;
  roles?: { id: string; name: string }[];
  unrestricted?: boolean;
  access_rules?: { service?: string; method?: string; path?: string }[] | null;
};

function generationOf(user: RawUser, owner: string): Generation | undefined {
  const { marker } = parseDescriptionMarker(user.description);
  const record = parseRecord(user[recordAttribute]);
  if (marker?.owner !== owner || !record) return undefined;
  const made = Date.parse(record.made);
  return Number.isNaN(made) ? undefined : { userId: user.id, marker, made, record };
}

/** The user's credential marked for the same manifest (one GET per user: Keystone lists credentials per user only). */
async function withCredential(identity: ServiceClient, gen: Generation): Promise<Generation> {
  const creds = await identity.list<RawCredential>(`/users/${encodeURIComponent(gen.userId)}/application_credentials`, 'application_credentials');
  const mine = creds.find((c) => parseDescriptionMarker(c.description).marker?.ref === gen.marker.ref);
  if (!mine) return gen;
  const roles = (mine.roles ?? []).map((r) => r.name).sort();
  const credential = { id: mine.id, roles, accessRules: normaliseRules(mine.access_rules), unrestricted: mine.unrestricted === true };
  return { ...gen, credential: { ...credential, ...(mine.expires_at ? { expiresAt: normaliseTime(mine.expires_at) } : {}) } };
}

/** Whether the Secret holds the credential; undefined where no Secret can be read (plan --base). */
async function delivered(secrets: SecretResolver | undefined, namespace: string, gen: Generation): Promise<boolean | undefined> {
  const writer = secrets?.writer;
  if (!writer || !gen.credential) return undefined;
  const data = await writer.read({ namespace, name: gen.record.secret });
  return data?.application_credential_id === gen.credential.id;
}

/** The Remotes of one project's service users: one per manifest, its generations inside. */
async function remotesOf(
  users: readonly RawUser[],
  o: { identity: ServiceClient; owner: string; namespace: string; secrets?: SecretResolver | undefined },
): Promise<Remote[]> {
  const byRef = new Map<string, Generation[]>();
  for (const u of users) {
    const gen = generationOf(u, o.owner);
    if (gen) byRef.set(gen.marker.ref, [...(byRef.get(gen.marker.ref) ?? []), await withCredential(o.identity, gen)]);
  }
  const now = Date.now();
  const out: Remote[] = [];
  for (const gens of byRef.values()) {
    const newestFirst = byAge(gens);
    const isDelivered = await delivered(o.secrets, o.namespace, newestFirst[0]!);
    const writer = o.secrets?.writer;
    const former = writer ? await formerSecrets(writer, o.namespace, newestFirst, isDelivered === true) : [];
    out.push(remoteOf(gens, now, isDelivered, former));
  }
  return out;
}

/**
 * The Remote of one manifest's generations at `now`; `former`: the Secrets a changed secretRef left
 * behind (formerSecrets). Exported for the unit tests of the rotation decisions.
 */
export function remoteOf(generations: readonly Generation[], now: number, isDelivered: boolean | undefined, former: readonly string[] = []): Remote {
  const [current, ...older] = byAge(generations);
  const c = current!;
  const name = c.marker.ref.slice(c.marker.ref.indexOf('/') + 1);
  return {
    id: c.credential?.id ?? c.userId,
    name,
    marker: c.marker,
    fields: {
      roles: c.credential?.roles ?? [],
      accessRules: c.credential?.accessRules ?? [],
      unrestricted: c.credential?.unrestricted ?? false,
      expiresAt: c.record.expiresAt,
      rotateAfter: c.record.rotateAfter,
      rotation: c.record.rotation,
      secretName: c.record.secret,
      credential: credentialState(c, now, isDelivered),
      pastGrace: pastGrace(byAge(generations), now).length,
      formerSecrets: former.length,
    },
    // Ids, times and names only: no secret is ever in hand after the create.
    raw: {
      userId: c.userId,
      rotatedAt: c.record.made,
      ...(c.credential?.expiresAt ? { expiresAt: c.credential.expiresAt } : {}),
      generations: [c, ...older],
      formerSecrets: [...former],
    },
  };
}

function generationsIn(remote: Remote): Generation[] {
  return (remote.raw.generations ?? []) as Generation[];
}

export const applicationCredential: KindAdapter = {
  kind: 'ApplicationCredential',
  // A credential belongs to the Keystone user KupenStack made for it: there is nothing of another's to import or adopt.
  ownership: neverForeign('an application credential: made by the namespace for a service user of its own; never imported or adopted', () => false),
  fields: {
    roles: 'update',
    accessRules: 'update',
    unrestricted: 'update',
    expiresAt: 'update',
    rotateAfter: 'update',
    rotation: 'update',
    secretName: 'update',
    credential: 'update',
    pastGrace: 'update',
    formerSecrets: 'update',
  },

  report: (remote) => ({
    userId: remote.raw.userId,
    secretName: remote.fields.secretName,
    rotatedAt: remote.raw.rotatedAt,
    ...(typeof remote.raw.expiresAt === 'string' ? { expiresAt: remote.raw.expiresAt } : {}),
    retiring: Math.max(0, generationsIn(remote).length - 1),
  }),

  async observe(ctx) {
    const users = await ctx.cloud.identity.list<RawUser>('/users', 'users', { name__startswith: serviceUserPrefix(ctx.owner, ctx.projectName) });
    const own = users.filter((u) => u.default_project_id === ctx.projectId);
    return remotesOf(own, { identity: ctx.cloud.identity, owner: ctx.owner, namespace: ctx.namespace, secrets: ctx.secrets });
  },

  async observeCloud(ctx) {
    // One list of the owner's service users for every project: a run's reads do not grow with the number of namespaces.
    const users = await ctx.cloud.identity.list<RawUser>('/users', 'users', { name__startswith: serviceUserPrefix(ctx.owner) });
    const out = new Map<string, Remote[]>();
    for (const [projectId, p] of ctx.projects) {
      const own = users.filter((u) => u.default_project_id === projectId);
      if (own.length === 0) continue;
      for (const remote of await remotesOf(own, { identity: ctx.cloud.identity, owner: ctx.owner, namespace: p.namespace, secrets: ctx.secrets }))
        bucket(out, projectId, remote);
    }
    return out;
  },

  desired: (m) => desiredFields(m),

  async create(ctx, m, _desired, marker) {
    const gen = await makeGeneration(ctx, m, marker, Date.now());
    return remoteOf([gen], gen.made, true);
  },

  /**
   * A rotation: a new generation, while the older ones keep working for the
   * grace. Only `pastGrace` or `formerSecrets` changed: no new credential;
   * delete the generations whose grace is over (the first run after it,
   * controller resync or agent interval) and the Secrets a changed
   * secretRef left behind. Those Secrets go first: a run killed between
   * the two still finds the older generation that names them.
   */
  async update(ctx, remote, changes, m) {
    const now = Date.now();
    const before = byAge(generationsIn(remote));
    // The Secret holds the current one, but a crash came before it was marked so: mark it, or the rotation would retire it at once.
    const current = before[0];
    if (current?.credential && !current.record.delivered && remote.fields.credential !== 'undelivered') before[0] = await markDelivered(ctx, current);
    const made = Object.keys(changes).some((k) => k !== 'pastGrace' && k !== 'formerSecrets') ? await makeGeneration(ctx, m, remote.marker!, now) : undefined;
    const all = byAge([...(made ? [made] : []), ...before]);
    const writer = ctx.secrets?.writer;
    // A new generation is in its Secret now (makeGeneration wrote it): look again; else what observe found.
    const former = made && writer ? await formerSecrets(writer, ctx.namespace, all, true) : ((remote.raw.formerSecrets ?? []) as string[]);
    for (const name of former) await writer?.removeOwned({ namespace: ctx.namespace, name }, ctx.owner);
    const gone = pastGrace(all, now);
    for (const gen of gone) await deleteGeneration(ctx, gen);
    return made
      ? remoteOf(
          all.filter((g) => !gone.includes(g)),
          now,
          true,
        )
      : undefined;
  },

  async delete(ctx, remote) {
    const gens = generationsIn(remote);
    for (const g of gens) await deleteGeneration(ctx, g);
    for (const secret of new Set(gens.map((g) => g.record.secret)))
      await ctx.secrets?.writer?.removeOwned({ namespace: ctx.namespace, name: secret }, ctx.owner);
  },
};
