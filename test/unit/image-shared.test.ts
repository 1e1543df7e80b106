import { describe, expect, it } from 'vitest';
import { adapters } from '../../agent/kinds/registry.ts';
import { beyondKeep } from '../../agent/kinds/image/shared.ts';
import { currentTag, useTag, usesBy } from '../../agent/kinds/image/use-tags.ts';
import type { GlanceImage } from '../../agent/glance/version-rules.ts';
import { planBetweenRevisions } from '../../agent/plan/between-revisions.ts';
import { jsonPlan } from '../../agent/plan/render/json.ts';
import { renderText } from '../../agent/plan/render/text.ts';
import { h, revisionMaker } from '../support/revisions.ts';

const revision = revisionMaker('ks-shared-');
const opts = { adapters, prune: true, massDeleteThreshold: 1, allowMassDelete: true, baseLabel: 'base', headLabel: 'head' };
/** Something else in the revision: an empty one is refused. */
const other = `${h('Network', 'n')}  mtu: 1450\n`;
const oci = (sharing: string, extra = ''): string => `${h('Image', 'os')}  source:\n    oci: {repository: 127.0.0.1:5050/vm/os, digest: "sha256:${'a'.repeat(64)}", ${sharing}}\n${extra}`;

describe('Image sharing: shared, as planned', () => {
  it('a new shared Image is planned as a share, a removed one as an unshare, and the text plan says so', async () => {
    const added = await planBetweenRevisions(await revision([other]), await revision([other, oci('sharing: shared')]), opts);
    expect(added.errors).toEqual([]);
    expect(added.plan.changes.map((c) => [c.address, c.action, c.sharing])).toEqual([['t/Image/os', 'create', 'share']]);
    expect(renderText(added.plan, { color: false })).toContain('t/Image/os will be shared with the project');
    expect(jsonPlan(added.plan).changes).toEqual([expect.objectContaining({ address: 't/Image/os', action: 'create', sharing: 'share' })]);

    const removed = await planBetweenRevisions(await revision([other, oci('sharing: shared')]), await revision([other]), opts);
    expect(removed.plan.changes.map((c) => [c.address, c.action, c.sharing])).toEqual([['t/Image/os', 'delete', 'unshare']]);
    expect(renderText(removed.plan, { color: false })).toContain('t/Image/os will be unshared from the project');

    // A private copy is created and deleted as before.
    const priv = await planBetweenRevisions(await revision([other]), await revision([other, oci('sharing: private')]), opts);
    expect(priv.plan.changes.map((c) => [c.action, c.sharing])).toEqual([['create', undefined]]);
  });

  it('switching a private copy to shared replaces it (source oci → oci-shared)', async () => {
    const { plan, errors } = await planBetweenRevisions(await revision([other, oci('sharing: private')]), await revision([other, oci('sharing: shared')]), opts);
    expect(errors).toEqual([]);
    expect(plan.changes.map((c) => [c.address, c.action])).toEqual([['t/Image/os', 'replace']]);
    expect(plan.changes[0]!.fields.find((f) => f.path === 'source')).toMatchObject({ before: 'oci', after: 'oci-shared', forcesReplacement: true });
  });

  it('shares by default; a manifest that shapes its own copy (a per-image field) gets a private one without saying so', async () => {
    const plain = await planBetweenRevisions(await revision([other]), await revision([other, oci('insecure: true')]), opts);
    expect(plain.errors).toEqual([]);
    expect(plain.plan.changes.map((c) => [c.address, c.action, c.sharing])).toEqual([['t/Image/os', 'create', 'share']]);
    const shaped = ['  visibility: public\n', '  properties: {hw_disk_bus: virtio}\n', '  minDisk: 1\n', '  name: ubuntu\n'];
    expect(shaped.length).toBe(4);
    for (const extra of shaped) {
      const own = await planBetweenRevisions(await revision([other]), await revision([other, oci('insecure: true', extra)]), opts);
      expect(own.errors, extra).toEqual([]);
      expect(own.plan.changes.map((c) => [c.address, c.action, c.sharing]), extra).toEqual([['t/Image/os', 'create', undefined]]);
    }
    // Dropping the per-image field makes it shared: a replace (source oci → oci-shared), as the plan says.
    const switched = await planBetweenRevisions(await revision([other, oci('insecure: true', '  minDisk: 1\n')]), await revision([other, oci('insecure: true')]), opts);
    expect(switched.plan.changes.map((c) => [c.address, c.action])).toEqual([['t/Image/os', 'replace']]);
  });

  it('refuses per-image fields on a shared Image, naming the manifest and the fix', async () => {
    const { errors } = await planBetweenRevisions(await revision([other]), await revision([other, oci('sharing: shared', '  name: ubuntu\n  visibility: private\n')]), opts);
    expect(errors).toHaveLength(1);
    const message = errors[0]!;
    expect(message).toContain('t/Image/os');
    expect(message).toContain('spec.name, spec.visibility cannot be set with source.oci.sharing: shared');
    expect(message).toContain('set sharing: private');
  });

  it('marks each use with the project and the manifest, without a `/` (tags travel in a URL path)', () => {
    const marker = { owner: 'o', ref: 'Image/os', specHash: '1a2b3c4d' };
    // Issue 47: sealed (a member of the shared image reads its tags: no project id, no manifest name in clear).
    expect(useTag('p1', marker)).toMatch(/^kupenstack-use:[0-9a-f]{24}:1a2b3c4d:[A-Za-z0-9_-]+$/);
    expect(currentTag('p1', 'Image/os')).toMatch(/^kupenstack-current:[0-9a-f]{24}:[A-Za-z0-9_-]+$/);
    expect(usesBy({ id: 'i', status: 'active', tags: [useTag('p1', marker)] }, 'p1')).toEqual([{ ref: 'Image/os', specHash: '1a2b3c4d', tag: useTag('p1', marker), legacy: false }]);
  });
});

describe('Image sharing: which versions `keep` releases', () => {
  const at = (ms: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, 5, ms)).toISOString();
  // Glance's created_at has whole seconds: both versions below share one; their ids sort against their age.
  const version = (id: string, promotedMs: number): GlanceImage => ({ id, status: 'active', created_at: '2026-01-01T00:00:05Z', oci_promoted_at: at(promotedMs) });

  it('orders versions made in the same second by when they were made (ms), not by their random ids', () => {
    const older = [version('ffff-newer', 600), version('0000-older', 300)];
    expect(beyondKeep(older, 2).map((x) => x.id)).toEqual(['0000-older']);
    expect(beyondKeep(older, 1).map((x) => x.id)).toEqual(['ffff-newer', '0000-older']);
    expect(beyondKeep(older, 3)).toEqual([]);
  });
});
