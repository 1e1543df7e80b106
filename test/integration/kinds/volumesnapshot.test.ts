import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestHead as head, Workspace } from '../../support/apply.ts';

let ws: Workspace;
const ns = 'snap';

beforeAll(() => {
  ws = new Workspace();
});
afterAll(async () => {
  await ws.dispose();
});

interface CinderVolume {
  id: string;
  name: string;
  size: number;
  snapshot_id: string | null;
  status: string;
}
interface CinderSnapshot {
  id: string;
  name: string;
  size: number;
  volume_id: string;
  status: string;
}

/** What Cinder holds in the namespace's project, asked with the admin scope (not through the adapters). */
async function inCinder(): Promise<{ volumes: CinderVolume[]; snapshots: CinderSnapshot[] }> {
  const [project] = await ws.cloud.identity.list<{ id: string }>('/projects', 'projects', { name: `${ws.owner}-${ns}` });
  const cinder = (await ws.cloud.adminApis()).volume;
  const query = { all_tenants: 1, project_id: project!.id };
  return { volumes: await cinder.list<CinderVolume>('/volumes/detail', 'volumes', query), snapshots: await cinder.list<CinderSnapshot>('/snapshots/detail', 'snapshots', query) };
}

describe('VolumeSnapshot', () => {
  it('snapshots a volume and makes a volume from the snapshot: sizes and sources match in Cinder', async () => {
    ws.write({
      'data.yaml': [
        `${head('Volume', 'data', ns)}  size: 2\n`,
        `${head('VolumeSnapshot', 'before-upgrade', ns)}  volumeRef: {name: data}\n  description: taken before a risky change\n`,
        `${head('Volume', 'restored', ns)}  size: 3\n  source: {snapshotRef: {name: before-upgrade}}\n`,
      ].join('---\n'),
    });
    const applied = await ws.apply();
    expect(applied.diagnostics).toEqual([]);
    expect(applied.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(applied.report!.created).toBe(3);

    const { volumes, snapshots } = await inCinder();
    const data = volumes.find((v) => v.name === 'data')!;
    const restored = volumes.find((v) => v.name === 'restored')!;
    expect(snapshots).toHaveLength(1);
    const snap = snapshots[0]!;
    expect(snap).toMatchObject({ name: 'before-upgrade', volume_id: data.id, size: 2, status: 'available' });
    expect(data).toMatchObject({ size: 2, snapshot_id: null });
    expect(restored).toMatchObject({ size: 3, snapshot_id: snap.id });

    // Converged: nothing to write on a second apply.
    const again = await ws.apply();
    expect(again.report).toMatchObject({ created: 0, updated: 0, replaced: 0, errors: [] });
    expect(again.report!.apiCalls.write).toBe(0);
  });

  it('renames a snapshot in place, and prunes it before the volume it was taken of', async () => {
    ws.write({ 'data.yaml': ws.read('data.yaml').replace('taken before a risky change', 'kept for a week') });
    const renamed = await ws.apply();
    expect(renamed.report).toMatchObject({ updated: 1, replaced: 0, errors: [] });
    expect((await inCinder()).snapshots.map((s) => s.id)).toHaveLength(1);

    // All three go (one volume stays, so the project does): Cinder refuses to delete a volume that
    // still has a snapshot, so the order matters.
    ws.write({ 'data.yaml': `${head('Volume', 'keep', ns)}  size: 1\n` });
    const pruned = await ws.apply({ prune: true, allowMassDelete: true });
    expect(pruned.report!.errors, ws.log.join('\n')).toEqual([]);
    expect(pruned.report).toMatchObject({ created: 1, deleted: 3 });
    const left = await inCinder();
    expect([left.volumes.map((v) => v.name), left.snapshots]).toEqual([['keep'], []]);
  });
});
