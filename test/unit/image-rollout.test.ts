import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { RolloutLoop } from '../../agent/controller/rollouts/rollout-loop.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../agent/config/config.ts';
import { specFollows } from '../../agent/hooks/registry-match.ts';
import {
  decide,
  governs,
  movedTagOf,
  planWaves,
  step,
  waveOf,
  type RolloutState,
  type WaveHealth,
  type WavePlan,
} from '../../agent/kinds/imagerollout/index.ts';
import type { ImageRolloutSpec } from '../../agent/model/kinds.generated.ts';
import { applyPath } from '../../agent/standalone/apply-path.ts';
import { gateReason, gateResolution } from '../../agent/kinds/image/rollout-gate.ts';
import { ImageMemory, type DigestGate } from '../../agent/kinds/kit/image-memory.ts';
import type { AdapterContext } from '../../agent/kinds/kit/adapter.ts';
import type { Manifest } from '../../agent/model/manifest.ts';
import type { ResolvedDisk } from '../../oci/disk-source.ts';

/*
 * The ImageRollout's wave state machine (kinds/imagerollout/waves.ts), its
 * wave selection and gate, and what standalone `kupenstack apply` does with a
 * rollout: it refuses the revision before anything reaches OpenStack.
 */

const S = 'sha256:' + 'a'.repeat(64);
const T = 'sha256:' + 'b'.repeat(64);
const U = 'sha256:' + 'c'.repeat(64);

const spec: ImageRolloutSpec = {
  source: { repository: '127.0.0.1:5050/vm/os', tag: 'stable', insecure: true },
  waves: [{ name: 'canary', namespaceSelector: { matchLabels: { ring: 'canary' } }, soak: '20s' }],
};
const labels: Record<string, Record<string, string>> = { c1: { ring: 'canary' }, c2: { ring: 'canary' }, other: {} };
const waves: WavePlan[] = planWaves(spec, ['other', 'c1', 'c2'], (ns) => labels[ns]!);

const healthy = (): WaveHealth => ({ state: 'healthy' });
const t0 = Date.parse('2026-12-06T12:00:00Z');

function run(state: RolloutState, resolved: string, now: number, health: (w: WavePlan) => WaveHealth = healthy) {
  return step({ state, resolved, waves, health, now, progressDeadlineMs: 600_000 });
}

describe('ImageRollout waves', () => {
  it('puts each namespace in the first wave that selects it, the rest last', () => {
    expect(waves).toEqual([
      { name: 'canary', soakMs: 20_000, namespaces: ['c1', 'c2'] },
      { name: 'rest', soakMs: 0, namespaces: ['other'] },
    ]);
    expect(
      waveOf(
        { waves: [{ name: 'a', namespaceSelector: { matchExpressions: [{ key: 'ring', operator: 'In', values: ['x', 'canary'] }] } }] },
        { ring: 'canary' },
      ),
    ).toBe('a');
    expect(waveOf({ waves: [{ name: 'a', namespaceSelector: { matchExpressions: [{ key: 'ring', operator: 'DoesNotExist' }] } }] }, { ring: 'canary' })).toBe(
      'rest',
    );
  });

  it('adopts the digest it first sees as stable, then rolls a tag move wave by wave over the soak', () => {
    const first = run({ waves: [] }, S, t0);
    expect(first.state.stableDigest).toBe(S);
    expect(first.state.waves.map((w) => w.phase)).toEqual(['Succeeded', 'Succeeded']);

    // The tag moves: the canaries are admitted; their health is read at the next look.
    const moved = run(first.state, T, t0 + 1000, () => ({ state: 'waiting', why: 'Image c1/os is on S' }));
    expect(moved.state).toMatchObject({ stableDigest: S, targetDigest: T, currentWave: 'canary' });
    expect(moved.state.waves.map((w) => w.phase)).toEqual(['Progressing', 'Pending']);
    expect(moved.transitions.map((t) => t.to)).toEqual(['Started', 'Progressing']);
    expect(decide({ name: 'os', spec, state: moved.state }, labels.c1!)).toMatchObject({ digest: T });
    expect(decide({ name: 'os', spec, state: moved.state }, labels.other!)).toMatchObject({ digest: S });
    expect(decide({ name: 'os', spec, state: moved.state }, labels.other!)?.reason).toMatch(/held by rollout os in wave rest: wave canary progressing/);

    const soaking = run(moved.state, T, t0 + 5000);
    expect(soaking.state.waves.map((w) => w.phase)).toEqual(['Soaking', 'Pending']);
    expect(soaking.state.waves[0]!.message).toBe(`healthy; soaking until ${new Date(t0 + 25_000).toISOString()}`);
    // Within the soak nothing moves on.
    expect(run(soaking.state, T, t0 + 24_000).state.waves.map((w) => w.phase)).toEqual(['Soaking', 'Pending']);

    // After the soak the canaries succeed and the rest is admitted (its Images not moved yet) ...
    const restWaiting = (w: WavePlan): WaveHealth => (w.name === 'rest' ? { state: 'waiting', why: 'Image other/os is on S' } : { state: 'healthy' });
    const after = run(soaking.state, T, t0 + 25_000, restWaiting);
    expect(after.state.waves.map((w) => w.phase)).toEqual(['Succeeded', 'Progressing']);
    expect(decide({ name: 'os', spec, state: after.state }, labels.other!)).toMatchObject({ digest: T });
    // ... then, healthy (no soak for the rest), succeeds: the target is the stable digest.
    const done = run(after.state, T, t0 + 30_000);
    expect(done.state).toMatchObject({ stableDigest: T, targetDigest: T });
    expect(done.state.currentWave).toBeUndefined();
    expect(done.transitions.map((t) => t.to)).toEqual(['Succeeded', 'RolledOut']);
  });

  it('starts the soak again when health is lost while soaking', () => {
    const moved = run(run({ waves: [] }, S, t0).state, T, t0);
    const soaking = run(moved.state, T, t0 + 1000);
    const lost = run(soaking.state, T, t0 + 2000, () => ({ state: 'waiting', why: 'VirtualMachine c1/vm is not Ready' }));
    expect(lost.state.waves[0]).toMatchObject({ phase: 'Progressing' });
    expect(lost.state.waves[0]!.soakingSince).toBeUndefined();
  });

  it('fails the wave on a server in ERROR: every namespace back on the stable digest, until a new tag move', () => {
    const moved = run(run({ waves: [] }, S, t0).state, T, t0);
    const soaking = run(moved.state, T, t0 + 1000);
    const failed = run(soaking.state, T, t0 + 2000, () => ({ state: 'failed', why: 'server in ERROR: c1/vm' }));
    expect(failed.state.waves.map((w) => w.phase)).toEqual(['Failed', 'Pending']);
    expect(failed.transitions).toEqual([expect.objectContaining({ wave: 'canary', to: 'Failed', warning: true })]);
    for (const ns of ['c1', 'other']) expect(decide({ name: 'os', spec, state: failed.state }, labels[ns]!)).toMatchObject({ digest: S });
    // The failed rollout stays failed (health is not asked again) ...
    expect(run(failed.state, T, t0 + 100_000, () => ({ state: 'healthy' })).state.waves[0]!.phase).toBe('Failed');
    // ... and a new tag move starts a new rollout from the first wave.
    const again = run(failed.state, U, t0 + 200_000, () => ({ state: 'waiting', why: '…' }));
    expect(again.state).toMatchObject({ stableDigest: S, targetDigest: U });
    expect(again.state.waves.map((w) => w.phase)).toEqual(['Progressing', 'Pending']);
  });

  it('fails a wave not healthy within the progress deadline, and drops a rollout whose tag went back to stable', () => {
    const moved = run(run({ waves: [] }, S, t0).state, T, t0, () => ({ state: 'waiting', why: 'Image c1/os is on S' }));
    const late = run(moved.state, T, t0 + 600_001, () => ({ state: 'waiting', why: 'VirtualMachine c1/vm is not Ready' }));
    expect(late.state.waves[0]).toMatchObject({ phase: 'Failed', message: 'not healthy within 600 s: VirtualMachine c1/vm is not Ready' });
    const back = run(moved.state, S, t0 + 1000);
    expect(back.state).toMatchObject({ stableDigest: S, targetDigest: S });
    expect(back.transitions.map((t) => t.to)).toEqual(['Reverted']);
  });

  it('names the governed tag as a registry notification does, so the controller finds the Images that follow it', () => {
    expect(movedTagOf(spec.source, 'stable')).toEqual({ host: '127.0.0.1:5050', repository: 'vm/os', tag: 'stable' });
    expect(specFollows({ source: { oci: { repository: '127.0.0.1:5050/vm/os', tag: 'stable' } } }, [movedTagOf(spec.source, 'stable')])).toBe(true);
  });

  it('governs Images of the same repository and tag only', () => {
    expect(governs(spec, { repository: '127.0.0.1:5050/vm/os', tag: 'stable' })).toBe(true);
    expect(governs(spec, { repository: '127.0.0.1:5050/vm/os', tag: 'edge' })).toBe(false);
    expect(governs(spec, { repository: '127.0.0.1:5051/vm/os', tag: 'stable' })).toBe(false);
    expect(governs(spec, { repository: '127.0.0.1:5050/vm/os', semver: '1.x' })).toBe(false);
  });
});

describe('standalone kupenstack apply with an ImageRollout', () => {
  it('refuses the revision, naming the file, before any OpenStack call', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ks-rollout-'));
    writeFileSync(
      join(dir, 'rollout.yaml'),
      `apiVersion: kupenstack.io/v1alpha1
kind: ImageRollout
metadata: {name: os}
spec:
  source: {repository: 127.0.0.1:5050/vm/os, tag: stable}
  waves:
    - {name: canary, namespaceSelector: {matchLabels: {ring: canary}}, soak: 20s}
`,
    );
    const lines: string[] = [];
    // No such cloud: a call to OpenStack would fail differently than the refusal.
    const applied = applyPath({
      path: dir,
      cloud: 'no-such-cloud',
      cloudsFile: join(dir, 'none.yaml'),
      config: { ...defaultConfig, stateDir: join(dir, 'state') },
      prune: false,
      allowMassDelete: false,
      log: (l) => lines.push(l),
    });
    const err = (await applied.then(
      () => undefined,
      (e: unknown) => e,
    )) as { code?: string; message?: string } | undefined;
    expect(err?.code).toBe('imagerollout.standalone');
    expect(err?.message).toMatch(/rollout\.yaml:3: ImageRollout "os" is carried out by the in-cluster controller only/);
    expect(lines).toEqual([]);
  });
});

describe("the Image kind's seam (kinds/image/rollout-gate.ts)", () => {
  const disk = (digest: string, tag?: string): ResolvedDisk =>
    ({ reference: `127.0.0.1:5050/vm/os@${digest}`, repository: '127.0.0.1:5050/vm/os', manifestDigest: digest, ...(tag ? { tag } : {}) }) as ResolvedDisk;
  const manifest = { kind: 'Image', address: 'c1/Image/os' } as Manifest;
  const followed = { repository: '127.0.0.1:5050/vm/os', tag: 'stable' };
  const ctxWith = (gate: DigestGate | undefined): AdapterContext => ({ namespace: 'other', images: new ImageMemory(gate) }) as AdapterContext;

  it('resolves the digest the rollout allows by digest, keeping the tag it follows; the registry answer stands without a rollout', async () => {
    const asked: string[] = [];
    const byDigest = (d: string): Promise<ResolvedDisk> => {
      asked.push(d);
      return Promise.resolve(disk(d));
    };
    const held = await gateResolution(
      manifest,
      ctxWith({ decide: () => ({ digest: S, reason: 'held by rollout os in wave rest' }) }),
      followed,
      disk(T, 'stable'),
      byDigest,
    );
    expect(held).toMatchObject({ manifestDigest: S, tag: 'stable' });
    expect(asked).toEqual([S]);
    expect(gateReason(manifest)).toBe('held by rollout os in wave rest');
    // Allowed the digest the tag points to: no second resolution.
    const admitted = await gateResolution(
      manifest,
      ctxWith({ decide: () => ({ digest: T, reason: 'rollout os: wave canary admitted' }) }),
      followed,
      disk(T, 'stable'),
      byDigest,
    );
    expect(admitted.manifestDigest).toBe(T);
    expect(asked).toEqual([S]);
    const free = await gateResolution(manifest, ctxWith(undefined), followed, disk(T, 'stable'), byDigest);
    expect(free.manifestDigest).toBe(T);
    expect(gateReason(manifest)).toBeUndefined();
  });
});

describe("the controller's rollout gate", () => {
  /** An API server on loopback that answers the ImageRollouts list with `status` (a real HTTP exchange, no mock of the client). */
  async function apiAnswering(status: number, body: unknown): Promise<{ kc: KubeConfig; close: () => void }> {
    const server = createServer((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return { kc, close: () => server.close() };
  }
  const loopOn = (kc: KubeConfig, lines: string[]): RolloutLoop =>
    new RolloutLoop({
      kc,
      custom: kc.makeApiClient(CustomObjectsApi),
      openstack: () => Promise.reject(new Error('no cloud in this test')),
      projectNameOf: (ns) => `ks-${ns}`,
      host: { labelsOf: (ns) => labels[ns] ?? {}, imagesFollowing: () => [], resolveAgain: () => Promise.resolve() },
      acting: () => false,
      log: (l) => lines.push(l),
    });

  it('is closed until the rollouts were read: a Forbidden list holds every followed tag back', async () => {
    const api = await apiAnswering(403, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: 'forbidden' });
    try {
      const lines: string[] = [];
      const loop = loopOn(api.kc, lines);
      await loop.load();
      expect(lines).toEqual([expect.stringMatching(/^rollouts: could not list ImageRollouts: HTTP-Code: 403/)]);
      expect(() => loop.decide('c1', { repository: '127.0.0.1:5050/vm/os', tag: 'stable' })).toThrow(/ImageRollouts could not be read yet/);
    } finally {
      api.close();
    }
  });

  it('reads a rollout into the gate, and takes no CRD installed (404) as no rollout', async () => {
    const state: RolloutState = {
      stableDigest: S,
      targetDigest: T,
      currentWave: 'canary',
      waves: [
        { name: 'canary', phase: 'Soaking' },
        { name: 'rest', phase: 'Pending' },
      ],
    };
    const api = await apiAnswering(200, {
      apiVersion: 'kupenstack.io/v1alpha1',
      kind: 'ImageRolloutList',
      metadata: {},
      items: [{ apiVersion: 'kupenstack.io/v1alpha1', kind: 'ImageRollout', metadata: { name: 'os' }, spec, status: state }],
    });
    const missing = await apiAnswering(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'not found' });
    try {
      const loadLines: string[] = [];
      const loop = loopOn(api.kc, loadLines);
      await loop.load();
      expect(loadLines).toEqual([]);
      expect(loop.decide('c1', { repository: '127.0.0.1:5050/vm/os', tag: 'stable' })).toMatchObject({ digest: T });
      expect(loop.decide('other', { repository: '127.0.0.1:5050/vm/os', tag: 'stable' })).toMatchObject({ digest: S });
      expect(loop.decide('other', { repository: '127.0.0.1:5050/vm/other', tag: 'stable' })).toBeUndefined();
      const noneLines: string[] = [];
      const none = loopOn(missing.kc, noneLines);
      await none.load();
      expect(noneLines).toEqual([]);
      expect(none.decide('c1', { repository: '127.0.0.1:5050/vm/os', tag: 'stable' })).toBeUndefined();
    } finally {
      api.close();
      missing.close();
    }
  });
});
