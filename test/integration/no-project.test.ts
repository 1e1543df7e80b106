import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../agent/act/projects.ts';
import { Workspace } from '../support/apply.ts';

/**
 * Issue 46, item 5: apply never creates a project for a namespace whose manifests adopt another
 * project's objects. Such a project could hold none of them: every adoption would be refused, and
 * a second apply would find none of the ids visible. The adoption fails instead, naming the file,
 * the project that owns the object and the annotation that maps the namespace to it.
 */
describe('no project for a namespace that adopts what another project owns', () => {
  const ws = new Workspace();
  const network = ws.cloud.client('network');
  let projectId = '';
  let networkId = '';
  const projectName = `${ws.owner}-theirs`;

  beforeAll(async () => {
    projectId = (await ws.cloud.identity.post<{ project: { id: string } }>('/projects', { project: { name: projectName, domain_id: 'default' } })).project.id;
    networkId = (await network.post<{ network: { id: string } }>('/networks', { network: { name: 'theirs', project_id: projectId } })).network.id;
  });

  afterAll(async () => {
    await network.remove(`/networks/${networkId}`);
    for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: projectId })) await network.remove(`/security-groups/${g.id}`);
    await ws.cloud.identity.call('PATCH', `/projects/${projectId}`, { json: { project: { enabled: false } } });
    await ws.cloud.identity.remove(`/projects/${projectId}`);
    await ws.dispose();
  });

  it('refuses the adoption with the owner and the annotation, and makes no project', async () => {
    ws.write({ 'alpha/net.yaml': `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata: {name: theirs, namespace: alpha}\nspec:\n  import: {id: ${networkId}, adopt: true}\n` });
    const outcome = await ws.apply();
    const errors = outcome.report!.errors;
    expect(errors.map((e) => e.code)).toEqual(['import.no-project']);
    expect(errors[0]!.message).toMatch(/alpha\/net\.yaml:\d+/);
    expect(errors[0]!.message).toContain(`project "${projectName}" (${projectId})`);
    expect(errors[0]!.message).toContain(`kupenstack.io/project: "${projectName}"`);
    expect(await ownedProjects(ws.cloud, ws.owner)).toEqual([]);
    const names = (await ws.cloud.identity.list<{ name: string }>('/projects', 'projects', { name: `${ws.owner}-alpha` })).map((p) => p.name);
    expect(names).toEqual([]);
    // The network is untouched: no marker of ours in its description.
    const after = (await network.get<{ network: { description: string; project_id: string } }>(`/networks/${networkId}`)).network;
    expect(after).toMatchObject({ description: '', project_id: projectId });
  });
});
