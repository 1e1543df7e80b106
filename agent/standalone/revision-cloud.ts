import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { DEFAULT_CLOUD_NAMESPACE, driveCloud, type DriveResult } from '../cloud/drive.ts';
import { planCloud, planCloudBetween, type CloudPlan } from '../cloud/plan.ts';
import { loadKubeConfig } from '../kube/client.ts';
import type { Manifest } from '../model/manifest.ts';
import { specOf } from '../model/kinds.generated.ts';
import type { ValidatedRevision } from '../validate/validate.ts';

/**
 * The OpenStackCloud of a revision, for `apply`, `plan` and `agent` (one path): with a
 * kubeconfig the cloud is driven (apply, agent) or diffed (plan) in that cluster before the
 * OpenStack resources, which wait for it to be Ready; without, it is only validated.
 */
export interface CloudStepOptions {
  kubeconfig?: string;
  /** Wins over the spec's namespace; default `openstack`. */
  cloudNamespace?: string;
}

export const namespaceOf = (m: Manifest, opts: CloudStepOptions): string =>
  opts.cloudNamespace ?? specOf(m, 'OpenStackCloud').namespace ?? DEFAULT_CLOUD_NAMESPACE;

export const cloudManifest = (manifests: readonly Manifest[]): Manifest | undefined => manifests.find((m) => m.kind === 'OpenStackCloud');

/** A relative chart.path starts at the repository root: the folder given (or a manifest file's folder). */
export async function baseDirOf(path: string): Promise<string> {
  const s = await stat(path);
  return resolve(s.isDirectory() ? path : dirname(path));
}

async function applyCloud(m: Manifest, path: string, opts: CloudStepOptions, log: (line: string) => void, signal?: AbortSignal): Promise<DriveResult> {
  const kubeConfig = loadKubeConfig({ kubeconfig: opts.kubeconfig });
  const namespace = namespaceOf(m, opts);
  log(`cloud ${m.metadata.name}: release ${specOf(m, 'OpenStackCloud').release} in namespace ${namespace}`);
  const pauseAt = m.metadata.annotations?.['kupenstack.io/pause-upgrade-at'];
  return driveCloud(specOf(m, 'OpenStackCloud'), {
    kubeConfig,
    cloud: m.metadata.name,
    namespace,
    ...(pauseAt ? { pauseAt } : {}),
    baseDir: await baseDirOf(path),
    log,
    signal,
  });
}

/** `plan --kubeconfig`: what driving the revision's cloud would change in that cluster (server-side-apply dry run). */
export async function planRevisionCloud(m: Manifest, path: string, opts: CloudStepOptions): Promise<CloudPlan> {
  const kubeConfig = loadKubeConfig({ kubeconfig: opts.kubeconfig });
  const { cloud, namespace, changes, steps } = await planCloud(specOf(m, 'OpenStackCloud'), {
    kubeConfig,
    cloud: m.metadata.name,
    namespace: namespaceOf(m, opts),
    baseDir: await baseDirOf(path),
  });
  return { cloud, namespace, changes, steps };
}

/** `plan --base`: the cloud of the two revisions, their renders compared (no cluster). */
export function planCloudBetweenRevisions(base: Manifest | undefined, head: Manifest, baseDir: string): Promise<CloudPlan> {
  return planCloudBetween(head.metadata.name, base && specOf(base, 'OpenStackCloud'), specOf(head, 'OpenStackCloud'), baseDir);
}

/** The OpenStackCloud of a revision and, with a kubeconfig, the result of driving it. */
export interface RevisionCloud {
  manifest: Manifest;
  /** Absent without a kubeconfig: the cloud is only validated. */
  driven?: DriveResult;
  /** The revision's other manifests: they wait while the cloud is not Ready. */
  waiting: number;
}

/**
 * The one path `apply --kubeconfig` and `agent --kubeconfig` drive a revision's cloud by:
 * find the OpenStackCloud of the validated revision read from `dir`, drive it. Undefined
 * when the revision declares none.
 */
export async function driveRevisionCloud(
  rev: { dir: string; validated: ValidatedRevision },
  opts: CloudStepOptions,
  log: (line: string) => void,
  signal?: AbortSignal,
): Promise<RevisionCloud | undefined> {
  const manifest = cloudManifest(rev.validated.manifests);
  if (!manifest) return undefined;
  const waiting = rev.validated.manifests.filter((m) => m !== manifest).length;
  if (!opts.kubeconfig) return { manifest, waiting };
  return { manifest, waiting, driven: await applyCloud(manifest, rev.dir, opts, log, signal) };
}

/** Why the resources of a revision wait: the cloud's Ready condition (paused, outside the window, a failed step). */
export const cloudNotReady = (c: RevisionCloud): string =>
  `OpenStackCloud ${c.manifest.metadata.name} is not Ready: ` +
  `${c.driven?.status.conditions?.find((x) => x.type === 'Ready')?.message ?? 'see its status'}; ${c.waiting} resources wait for it, nothing else was applied`;
