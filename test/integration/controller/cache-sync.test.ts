import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RequestContext } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyRevision, type RevisionInput } from '../../../agent/act/apply.ts';
import { defaultConfig } from '../../../agent/config/config.ts';
import { Controller } from '../../../agent/controller/resources/controller.ts';
import { loadKubeConfig } from '../../../agent/kube/client.ts';
import { OpenStackCloud } from '../../../agent/openstack/cloud.ts';
import { loadSchemaRegistry } from '../../../agent/schema/registry.ts';
import { KubeSecretResolver } from '../../../agent/secrets/kubernetes.ts';
import { manifestHead as head } from '../../support/apply.ts';
import { testCloudName } from '../../support/context.ts';
import { adminKubeconfig, kubectl, kubectlOk, prepareControllerBed, until } from './harness.ts';

/*
 * The controller in this process against the real API server and the real
 * OpenStack, with the list of one kind held back 3 s (as a large or slow
 * list is): the namespace's watch has listed long before. No run may start
 * before every kind has listed — a run on a half-filled cache sees the
 * Network as absent (with prune on, it would delete it). The engine is the
 * real one; the test only records what each run was given.
 */
const run = randomBytes(3).toString('hex');
const ns = `cs-${run}`;
const owner = `cs${run}`;
const prefix = `${owner}-`;
const optIn = `cs-${run}`;
const cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
let controller: Controller | undefined;
const lines: string[] = [];
const given: string[][] = [];

const networksIn = async (): Promise<string[]> => {
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  return p ? (await cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: p.id })).map((n) => n.name) : [];
};

beforeAll(() => {
  prepareControllerBed({ system: 'kupenstack-system', namespaces: [ns], optIn });
  kubectlOk(['apply', '-f', '-'], { input: `${head('Network', 'kept', ns)}  mtu: 1400\n` });
});

afterAll(async () => {
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  if (controller) await until('the project to be emptied', async () => (await networksIn()).length === 0, 120_000).catch(() => undefined);
  await controller?.stop();
  const [p] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${prefix}${ns}` });
  if (p) {
    for (const n of await cloud.client('network').list<{ id: string }>('/networks', 'networks', { project_id: p.id })) await cloud.client('network').remove(`/networks/${n.id}`).catch(() => undefined);
    await cloud.identity.remove(`/projects/${p.id}`).catch(() => undefined);
  }
  for (const name of kubectl(['get', 'networks.kupenstack.io', '-n', ns, '-o', 'name']).stdout.split('\n').filter(Boolean))
    kubectl(['patch', name, '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
}, 300_000);

describe('the controller starting with one kind slow to list', () => {
  it('runs no namespace before every watch has listed: its first run already has the Network, which it creates', { timeout: 240_000 }, async () => {
    const kc = loadKubeConfig({ kubeconfig: adminKubeconfig });
    const authenticate = kc.applySecurityAuthentication.bind(kc);
    let held = 0;
    kc.applySecurityAuthentication = async (context: RequestContext) => {
      const url = new URL(context.getUrl());
      const watch = url.searchParams.get('watch');
      if (context.getHttpMethod() === 'GET' && url.pathname.endsWith('/kupenstack.io/v1alpha1/networks') && watch !== 'true' && watch !== '1') {
        held++;
        await sleep(3_000);
      }
      return authenticate(context);
    };
    const secrets = new KubeSecretResolver(kc, 'kupenstack-system');
    controller = new Controller({
      kc,
      registry: loadSchemaRegistry(),
      config: { ...defaultConfig, owner, projectPrefix: prefix },
      cloud: () => Promise.resolve(cloud),
      secrets,
      engine: (input: RevisionInput, deps, opts) => {
        given.push(input.validated.manifests.map((m) => m.address));
        return applyRevision(input, deps, opts);
      },
      optInLabel: { key: 'kupenstack.io/project', value: optIn },
      resyncMs: 3_600_000,
      debounceMs: 500,
      log: (line) => lines.push(line),
    });
    await controller.start();
    expect(held).toBe(1);
    await until('the namespace to be reconciled', () => Promise.resolve(lines.some((l) => l.startsWith(`reconciled ${ns} `))), 180_000);
    await controller.idle();
    expect(given.length, lines.join('\n')).toBeGreaterThan(0);
    // Every run had the Network; none ran on a cache without it.
    for (const addresses of given) expect(addresses, lines.join('\n')).toContain(`${ns}/Network/kept`);
    expect(await networksIn()).toEqual(['kept']);
  });
});
