import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestHead as head, Workspace } from '../support/apply.ts';
import { peers } from '../support/peers.ts';

let ws: Workspace;
const password = randomBytes(12).toString('hex');
const cleanup: (() => Promise<unknown>)[] = [];
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
  await ws.dispose();
});

/** The openstack CLI as a given user, scoped to a given project: what that user really sees. */
function networksSeenBy(user: string, project: string): string[] {
  const out = execFileSync('openstack', ['network', 'list', '-f', 'value', '-c', 'Name'], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      OS_AUTH_URL: peers.keystone,
      OS_IDENTITY_API_VERSION: '3',
      OS_USERNAME: user,
      OS_PASSWORD: password,
      OS_PROJECT_NAME: project,
      OS_USER_DOMAIN_NAME: 'Default',
      OS_PROJECT_DOMAIN_NAME: 'Default',
      OS_REGION_NAME: peers.region,
    },
  });
  return out.split('\n').filter(Boolean).sort();
}

describe('namespace == project', () => {
  it('resources live in their project: a member of another project does not see them, a member of that project does', async () => {
    ws.write({ 'ns.yaml': `${head('Network', 'private-net', 'iso')}  mtu: 1400\n` });
    expect((await ws.apply()).report).toMatchObject({ created: 1, errors: [] });

    const identity = ws.cloud.identity;
    const [member] = await identity.list<{ id: string }>('/roles', 'roles', { name: 'member' });
    const [ours] = await identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-iso` });
    const other = await identity.post<{ project: { id: string; name: string } }>('/projects', { project: { name: `${ws.owner}-other`, domain_id: 'default' } });
    cleanup.push(() => identity.remove(`/projects/${other.project.id}`));
    const user = await identity.post<{ user: { id: string; name: string } }>('/users', { user: { name: `${ws.owner}-user`, password, domain_id: 'default' } });
    cleanup.push(() => identity.remove(`/users/${user.user.id}`));
    await identity.put(`/projects/${other.project.id}/users/${user.user.id}/roles/${member!.id}`, undefined, [204]);

    const seenFromOther = networksSeenBy(user.user.name, other.project.name);
    expect(seenFromOther).not.toContain('private-net');
    expect(seenFromOther).toContain('public'); // the shared external network stays visible: the listing works

    await identity.put(`/projects/${ours!.id}/users/${user.user.id}/roles/${member!.id}`, undefined, [204]);
    expect(networksSeenBy(user.user.name, `${ws.owner}-iso`)).toContain('private-net');
  });
});
