import type * as k8s from '@kubernetes/client-node';
import type { WaveHealth, WavePlan } from '../../kinds/imagerollout/index.ts';
import type { ImageRolloutSpec } from '../../model/kinds.generated.ts';
import type { OpenStackCloud } from '../../openstack/cloud.ts';
import { apiVersion } from '../../schema/registry.ts';

const [group, version] = apiVersion.split('/') as [string, string];

/** What a wave's health reads: the custom resources of its namespaces and Nova. */
export interface HealthReader {
  custom: k8s.CustomObjectsApi;
  /** The OpenStack client of a namespace's cloud (its OpenStackCloudConnection's, else the default one). */
  openstack: (namespace: string) => Promise<OpenStackCloud>;
  /** The Keystone project of a namespace (prefix + namespace, as the resource loop names it). */
  projectNameOf: (namespace: string) => string;
}

interface Cr {
  metadata: { name: string; generation?: number };
  status?: { observedGeneration?: number; digest?: string; observed?: { digest?: string }; conditions?: { type: string; status: string; message?: string }[] };
}

/** The Images of a wave that the rollout governs, by address, with the digest each must reach. */
export interface WaveTarget {
  images: readonly string[];
  digest: string;
}

const plurals = { VirtualMachine: 'virtualmachines', Image: 'images' } as const;

/**
 * A wave is healthy when every governed Image of it reports the target
 * digest, every object of the health kinds is Ready at its generation, and
 * (failOnServerError) no server of its projects is in ERROR, which fails it
 * at once (fail fast: a canary that broke a VM stops the rollout).
 */
export async function waveHealth(r: HealthReader, spec: ImageRolloutSpec, wave: WavePlan, target: WaveTarget): Promise<WaveHealth> {
  if (spec.health?.failOnServerError ?? true) {
    const errors = await serversInError(r, wave.namespaces);
    if (errors.length) return { state: 'failed', why: `server${errors.length > 1 ? 's' : ''} in ERROR: ${errors.slice(0, 5).join(', ')}` };
  }
  for (const address of target.images) {
    const [ns, , name] = address.split('/') as [string, string, string];
    const cr = await get(r, ns, 'images', name);
    const digest = cr?.status?.digest ?? cr?.status?.observed?.digest;
    if (digest !== target.digest) return { state: 'waiting', why: `Image ${ns}/${name} is on ${digest ?? 'no digest yet'}, not the target yet` };
  }
  for (const kind of spec.health?.kinds ?? ['VirtualMachine', 'Image']) {
    for (const ns of wave.namespaces) {
      const notReady = (await list(r, ns, plurals[kind])).find((o) => !ready(o));
      if (notReady) return { state: 'waiting', why: `${kind} ${ns}/${notReady.metadata.name} is not Ready${readyMessage(notReady)}` };
    }
  }
  return { state: 'healthy' };
}

function ready(o: Cr): boolean {
  const c = o.status?.conditions?.find((x) => x.type === 'Ready');
  return c?.status === 'True' && (o.metadata.generation === undefined || o.status?.observedGeneration === o.metadata.generation);
}

function readyMessage(o: Cr): string {
  const m = o.status?.conditions?.find((x) => x.type === 'Ready')?.message;
  return m ? ` (${m.slice(0, 200)})` : '';
}

async function list(r: HealthReader, namespace: string, plural: string): Promise<Cr[]> {
  const l = (await r.custom.listNamespacedCustomObject({ group, version, namespace, plural })) as { items: Cr[] };
  return l.items;
}

async function get(r: HealthReader, namespace: string, plural: string, name: string): Promise<Cr | undefined> {
  try {
    return (await r.custom.getNamespacedCustomObject({ group, version, namespace, plural, name })) as Cr;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

/** Nova's own word: servers of the namespaces' projects in ERROR (one admin list per project). */
async function serversInError(r: HealthReader, namespaces: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const ns of namespaces) {
    // Each namespace in its own cloud: a project looked for in another cloud would never show its servers.
    const cloud = await r.openstack(ns);
    const compute = await cloud.adminCompute();
    const [project] = await cloud.identity.list<{ id: string }>('/projects', 'projects', { name: r.projectNameOf(ns) });
    if (!project) continue;
    const servers = await compute.list<{ id: string; name: string }>('/servers/detail', 'servers', {
      all_tenants: 'true',
      project_id: project.id,
      status: 'ERROR',
    });
    out.push(...servers.map((s) => `${ns}/${s.name} (${s.id})`));
  }
  return out;
}
