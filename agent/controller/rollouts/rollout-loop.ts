import * as k8s from '@kubernetes/client-node';
import type { MovedTag } from '../../hooks/registry-match.ts';
import {
  decide,
  governs,
  movedTagOf,
  planWaves,
  resolveTag,
  step,
  timingsOf,
  type RolloutState,
  type RolloutView,
  type Transition,
} from '../../kinds/imagerollout/index.ts';
import type { DigestGate, FollowedTag, GateDecision } from '../../kinds/kit/image-memory.ts';
import type { ImageRolloutSpec, ImageRolloutStatus } from '../../model/kinds.generated.ts';
import { KupenstackError } from '../../errors.ts';
import { mergePatch } from '../../kube/client.ts';
import { stableJson } from '../../ownership/marker.ts';
import { apiVersion } from '../../schema/registry.ts';
import { setCondition } from '../../status/conditions.ts';
import { waveHealth, type HealthReader } from './health.ts';

const [group, version] = apiVersion.split('/') as [string, string];
const plural = 'imagerollouts';
/** Events of a cluster-scoped object live in `default` (the API server accepts no other namespace for them). */
const eventNamespace = 'default';

/** What the rollout loop reads of the resource loop (controller/resources/controller.ts), without importing it. */
export interface RolloutHost {
  labelsOf(namespace: string): Record<string, string>;
  /** Addresses (`ns/Image/name`) of the opted-in Images that follow one of these tags. */
  imagesFollowing(pushes: readonly MovedTag[]): string[];
  /** Runs those Images' namespaces now, their tags resolved again. */
  resolveAgain(addresses: readonly string[]): Promise<void>;
}

export interface RolloutLoopOptions extends HealthReader {
  kc: k8s.KubeConfig;
  host: RolloutHost;
  /** Whether this replica leads (writes status, moves waves); a follower still gates with what the leader wrote. */
  acting: () => boolean;
  log: (line: string) => void;
  /** How often rollouts are looked at (a wave's health, its soak); default 5 s. */
  tickMs?: number;
}

interface RolloutCr {
  metadata: { name: string; generation?: number; uid?: string; resourceVersion?: string };
  spec: ImageRolloutSpec;
  status?: ImageRolloutStatus;
}

/**
 * The ImageRollout loop: every tick it reads the rollouts, asks the registry
 * where each governed tag points (every spec.interval), works out the waves
 * from the namespaces' labels, moves the state machine
 * (kinds/imagerollout/waves.ts) with each wave's health, and writes status
 * and an Event per transition. A transition that admits or holds namespaces
 * runs them at once (resolveAgain). It is also the Image kind's gate
 * (DigestGate): the last written status says which digest a namespace may use.
 */
export class RolloutLoop implements DigestGate {
  private readonly opts: RolloutLoopOptions;
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  private readonly rollouts = new Map<string, RolloutView>();
  private readonly resolvedAt = new Map<string, { at: number; digest: string; tag: string | undefined }>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  /** Whether the rollouts were read at least once (the gate is closed before). */
  private loaded = false;

  constructor(opts: RolloutLoopOptions) {
    this.opts = opts;
    this.custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = opts.kc.makeApiClient(k8s.CoreV1Api);
  }

  decide(namespace: string, tag: FollowedTag): GateDecision | undefined {
    // Fail closed: until the rollouts were read once, a held namespace could take a tag's new digest.
    if (!this.loaded)
      throw new KupenstackError(
        'imagerollout.not-read',
        'the ImageRollouts could not be read yet (see the controller log: the API server, or the controller role lacking imagerollouts); an Image that follows a tag waits for them',
      );
    for (const r of this.rollouts.values()) if (governs(r.spec, tag)) return decide(r, this.opts.host.labelsOf(namespace));
    return undefined;
  }

  /** The rollouts read once, before the resource loop's first runs (the gate is closed until then); the ticks start with start(). */
  async load(): Promise<void> {
    await this.read().catch((err: unknown) => this.opts.log(`rollouts: could not list ImageRollouts: ${(err as Error).message}`));
  }

  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.opts.tickMs ?? 5_000);
  }

  /** Stops the ticks; a look in flight ends on its own (its writes are the leader's, as any other). */
  stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    return Promise.resolve();
  }

  /** One look at every rollout; a look still running skips this tick. */
  async tick(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (const cr of await this.read()) {
        if (!this.opts.acting()) continue;
        await this.look(cr).catch((err: unknown) => this.opts.log(`rollout ${cr.metadata.name}: ${(err as Error).message}`));
      }
    } catch (err) {
      this.opts.log(`rollouts: could not list ImageRollouts: ${(err as Error).message}`);
    } finally {
      this.running = false;
    }
  }

  /** The rollouts now, into the gate's cache. No CRD installed (404) is no rollout: an older install's Images are not held back. */
  private async read(): Promise<RolloutCr[]> {
    let items: RolloutCr[];
    try {
      items = ((await this.custom.listClusterCustomObject({ group, version, plural })) as { items: RolloutCr[] }).items;
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
      items = [];
    }
    const names = new Set(items.map((cr) => cr.metadata.name));
    for (const name of this.rollouts.keys()) if (!names.has(name)) this.rollouts.delete(name);
    for (const cr of items) this.rollouts.set(cr.metadata.name, viewOf(cr));
    this.loaded = true;
    return items;
  }

  /** One rollout: resolve when due, step, write status and Events, run the namespaces whose digest changed. */
  private async look(cr: RolloutCr): Promise<void> {
    const { name } = cr.metadata;
    const { digest: resolved, tag } = await this.resolve(cr);
    // A semver range: the Images whose range takes the tag it resolved to.
    const images = this.opts.host.imagesFollowing([movedTagOf(cr.spec.source, tag)]);
    // None of the governed Images is in this controller's namespaces: another controller (another opt-in label, or
    // cloud) drives this rollout. Its status is left to that one: written here, it would claim empty waves done.
    if (images.length === 0) return;
    const waves = planWaves(
      cr.spec,
      images.map((a) => a.split('/')[0]!),
      (ns) => this.opts.host.labelsOf(ns),
    );
    const before = viewOf(cr).state;
    const target = cr.status?.targetDigest;
    const health = new Map<string, Awaited<ReturnType<typeof waveHealth>>>();
    // Health is read before the (synchronous) step: only the wave the step can look at needs it.
    for (const w of waves) {
      const phase = before?.waves.find((x) => x.name === w.name)?.phase;
      if (before && resolved === target && (phase === 'Progressing' || phase === 'Soaking'))
        health.set(
          w.name,
          await waveHealth(this.opts, cr.spec, w, { images: images.filter((a) => w.namespaces.includes(a.split('/')[0]!)), digest: resolved }),
        );
    }
    const { state, transitions } = step({
      state: before ?? { waves: [] },
      resolved,
      waves,
      // A wave admitted in this step is looked at again at the next tick, with its health read.
      health: (w) => health.get(w.name) ?? { state: 'waiting', why: 'admitted; its health is read at the next look' },
      now: Date.now(),
      progressDeadlineMs: timingsOf(cr.spec).progressDeadlineMs,
    });
    const key = `${name}|${cr.metadata.generation ?? 0}`;
    const status = statusOf(cr, state, this.resolvedAt.get(key)?.at);
    // Nothing changed but the registry's last answer time (a wave soaking, waiting on the same reason): no write.
    if (stableJson({ ...status, lastResolved: null }) === stableJson({ ...cr.status, lastResolved: null })) return;
    // currentWave null: a merge patch removes it once every wave is done.
    await this.custom.patchClusterCustomObjectStatus({ group, version, plural, name, body: { status: { currentWave: null, ...status } } }, mergePatch);
    // The gate follows what is written, never a state the API server did not take.
    this.rollouts.set(name, { name, spec: cr.spec, state });
    for (const t of transitions) this.event(cr, t);
    if (movedDigests(before, state)) await this.opts.host.resolveAgain(images);
  }

  /** Where the tag points: asked every spec.interval (default 1m), else the last answer. */
  private async resolve(cr: RolloutCr): Promise<{ digest: string; tag: string | undefined }> {
    const key = `${cr.metadata.name}|${cr.metadata.generation ?? 0}`;
    const last = this.resolvedAt.get(key);
    if (last && Date.now() - last.at < timingsOf(cr.spec).intervalMs) return last;
    const answer = await resolveTag(cr.spec.source);
    for (const k of this.resolvedAt.keys()) if (k.startsWith(`${cr.metadata.name}|`)) this.resolvedAt.delete(k);
    this.resolvedAt.set(key, { at: Date.now(), ...answer });
    return answer;
  }

  private event(cr: RolloutCr, t: Transition): void {
    const now = new Date();
    const reason = t.wave ? `Wave${t.to}` : `Rollout${t.to}`;
    void this.core
      .createNamespacedEvent({
        namespace: eventNamespace,
        body: {
          metadata: { generateName: `${cr.metadata.name}.`, namespace: eventNamespace },
          involvedObject: { apiVersion, kind: 'ImageRollout', name: cr.metadata.name, uid: cr.metadata.uid, resourceVersion: cr.metadata.resourceVersion },
          reason,
          message: t.message.slice(0, 1024),
          type: t.warning ? 'Warning' : 'Normal',
          source: { component: 'kupenstack-controller' },
          reportingComponent: 'kupenstack-controller',
          reportingInstance: 'kupenstack-controller',
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      })
      .catch((err: unknown) => this.opts.log(`rollout ${cr.metadata.name}: could not record ${reason} (${(err as { code?: number }).code ?? 'no response'})`));
    this.opts.log(`rollout ${cr.metadata.name}: ${t.message}`);
  }
}

function viewOf(cr: RolloutCr): RolloutView {
  const s = cr.status;
  return { name: cr.metadata.name, spec: cr.spec, state: s?.stableDigest ? { ...pickState(s), waves: s.waves ?? [] } : undefined };
}

function pickState(s: ImageRolloutStatus): Omit<RolloutState, 'waves'> {
  return {
    ...(s.stableDigest ? { stableDigest: s.stableDigest } : {}),
    ...(s.targetDigest ? { targetDigest: s.targetDigest } : {}),
    ...(s.currentWave ? { currentWave: s.currentWave } : {}),
  };
}

/** Whether any namespace's allowed digest changed: a wave admitted, a failure, a new target or a new stable digest. */
function movedDigests(before: RolloutState | undefined, after: RolloutState): boolean {
  if (!before) return false;
  if (before.stableDigest !== after.stableDigest || before.targetDigest !== after.targetDigest) return true;
  const phases = (s: RolloutState): string => s.waves.map((w) => `${w.name}:${w.phase === 'Pending' ? 'P' : w.phase === 'Failed' ? 'F' : 'A'}`).join(',');
  return phases(before) !== phases(after);
}

/** The status as written: the state, and Ready / Stalled in the shape the other kinds use. */
function statusOf(cr: RolloutCr, state: RolloutState, resolvedAt: number | undefined): ImageRolloutStatus {
  const failed = state.waves.find((w) => w.phase === 'Failed');
  const done = state.targetDigest === state.stableDigest;
  let conditions = cr.status?.conditions ?? [];
  const generation = cr.metadata.generation;
  const set = (type: 'Ready' | 'Stalled' | 'Reconciling', status: 'True' | 'False', reason: string, message: string): void => {
    conditions = setCondition(conditions, { type, status, reason, message, ...(generation !== undefined ? { observedGeneration: generation } : {}) });
  };
  if (failed) {
    const message = `wave ${failed.name} failed: ${failed.message ?? ''}; every namespace is back on ${state.stableDigest}; a new tag move starts a new rollout`;
    set('Ready', 'False', 'WaveFailed', message);
    set('Stalled', 'True', 'WaveFailed', message);
    set('Reconciling', 'False', 'WaveFailed', 'waiting for a new tag move');
  } else if (done) {
    set('Ready', 'True', 'RolledOut', `every wave is on ${state.stableDigest}`);
    set('Stalled', 'False', 'RolledOut', '');
    set('Reconciling', 'False', 'RolledOut', '');
  } else {
    const current = state.waves.find((w) => w.name === state.currentWave);
    const message = `rolling ${state.targetDigest} out: wave ${current?.name ?? '?'} ${current?.phase ?? ''}${current?.message ? ` (${current.message})` : ''}`;
    set('Ready', 'False', 'Progressing', message);
    set('Stalled', 'False', 'Progressing', '');
    set('Reconciling', 'True', 'Progressing', message);
  }
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
    ...(state.stableDigest ? { stableDigest: state.stableDigest } : {}),
    ...(state.targetDigest ? { targetDigest: state.targetDigest } : {}),
    ...(state.currentWave && !done ? { currentWave: state.currentWave } : {}),
    ...(resolvedAt !== undefined ? { lastResolved: new Date(resolvedAt).toISOString() } : {}),
    waves: state.waves,
  };
}
