import { randomBytes } from 'node:crypto';
import { ensureProjects } from '../../agent/act/projects.ts';
import type { AdapterContext } from '../../agent/kinds/kit/adapter.ts';
import type { Manifest } from '../../agent/model/manifest.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { SourceDocument } from '../../agent/model/manifest.ts';

export const testCloudName = 'kupenstack-local';

export interface TestProject {
  cloud: OpenStackCloud;
  ctx: AdapterContext;
  /** Record the id of another manifest's object, for ctx.idOf. */
  ids: Map<string, string>;
  /** Deletes the Keystone project (tests delete their own resources first). */
  dispose: () => Promise<void>;
}

/** A fresh Keystone project owned by a fresh owner, and an adapter context acting inside it. */
export async function testProject(label: string): Promise<TestProject> {
  const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  const owner = `t${randomBytes(4).toString('hex')}`;
  const namespace = `${label}-${owner}`.slice(0, 63);
  const projects = await ensureProjects(cloud, [namespace], { owner, prefix: 'kst-', domainId: 'default', role: 'member' });
  const project = projects.get(namespace)!;
  const ids = new Map<string, string>();
  const memos = new Map<string, Promise<unknown>>();
  const ctx: AdapterContext = {
    memo: <T>(key: string, load: () => Promise<T>): Promise<T> => {
      let p = memos.get(key);
      if (!p) memos.set(key, (p = load()));
      return p as Promise<T>;
    },
    cloud,
    apis: await cloud.forProject(project.id),
    namespace,
    projectId: project.id,
    projectName: project.name,
    owner,
    idOf: (kind, name) => {
      const id = ids.get(`${kind}/${name}`);
      if (!id) throw new Error(`test: no id recorded for ${kind}/${name}`);
      return id;
    },
  };
  return {
    cloud,
    ctx,
    ids,
    dispose: async () => {
      // Neutron keeps a project's "default" security group after the project is gone.
      const network = cloud.client('network');
      for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: project.id })) await network.remove(`/security-groups/${g.id}`);
      await cloud.identity.call('PATCH', `/projects/${project.id}`, { json: { project: { enabled: false } } });
      await cloud.identity.remove(`/projects/${project.id}`);
    },
  };
}

/** A manifest as the validator would hand it over, for adapter tests. */
export function manifest(kind: string, name: string, namespace: string, spec: Record<string, unknown>): Manifest {
  const source: SourceDocument = { file: 'test.yaml', index: 0, value: {}, position: () => ({ line: 1, column: 1 }) };
  return { apiVersion: 'kupenstack.io/v1alpha1', kind, metadata: { name, namespace }, spec, source, address: `${namespace}/${kind}/${name}` };
}
