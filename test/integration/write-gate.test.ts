import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownedProjects } from '../../agent/act/projects.ts';
import type { Progress } from '../../lib/progress.ts';
import { manifestHead as head, Workspace } from '../support/apply.ts';

/*
 * What the controller waits for before its first write (its finalizers, set while the run
 * observes and plans: issue 33) holds every OpenStack write of the run, bulk creates and the
 * create journal's record included: a gate that refuses leaves nothing made in Neutron and no
 * journal entry the next run would wait for. Real Keystone and Neutron.
 */
let ws: Workspace;
beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

const net = (name: string): Record<string, string> => ({ [`gate/${name}.yaml`]: `${head('Network', name, 'gate')}  mtu: 1400\n` });

async function names(): Promise<string[]> {
  const project = (await ownedProjects(ws.cloud, ws.owner)).find((p) => p.namespace === 'gate')!;
  return (await ws.cloud.client('network').list<{ name: string }>('/networks', 'networks', { project_id: project.id })).map((n) => n.name).sort();
}

describe('the write gate of a run', () => {
  it('holds every OpenStack write while it refuses, and leaves nothing the next run waits for', async () => {
    ws.write(net('net-a'));
    expect((await ws.apply()).report).toMatchObject({ created: 1, errors: [] });

    ws.write({ ...net('net-b'), ...net('net-c'), ...net('net-d') });
    let asked = 0;
    const refuse = (): Promise<Progress> => {
      asked++;
      return Promise.resolve({ reason: 'the finalizers are not set', afterMs: 1000 });
    };
    const held = await ws.apply({ openstack: ws.cloud.gated(refuse) });
    expect(asked).toBeGreaterThan(0);
    expect(held.report?.created).toBe(0);
    expect(await names()).toEqual(['net-a']);

    // Nothing was sent, so nothing is waited for: the next run makes the three at once.
    ws.log.length = 0;
    expect((await ws.apply()).report).toMatchObject({ created: 3, errors: [] });
    expect(ws.log.join('\n')).not.toMatch(/creates an earlier run sent/);
    expect(await names()).toEqual(['net-a', 'net-b', 'net-c', 'net-d']);
  });
});
