import { describe, expect, it } from 'vitest';
import type { GlanceImage } from '../../agent/glance/version-rules.ts';
import { currentTag, isCurrentFor, openRef, projectPseudonym, resealing, sealRef, useTag, usesBy } from '../../agent/kinds/image/use-tags.ts';

// Issue 47: a shared image's tags are read by every member project; they must not list the
// projects using it (their ids) nor their manifests' names.
const projectA = '4f1c2a9e8d7b6c5a4f3e2d1c0b9a8f7e';
const projectB = '0a1b2c3d4e5f60718293a4b5c6d7e8f9';
const marker = { owner: 'o', ref: 'Image/payroll-db', specHash: '1a2b3c4d' };
const image = (tags: string[]): GlanceImage => ({ id: 'img', status: 'active', tags });

describe('the use tags of a shared image', () => {
  it('name neither the project nor the manifest; the same tag every time (adds and removes find it)', () => {
    const tags = [useTag(projectA, marker), currentTag(projectA, marker.ref), useTag(projectB, { ...marker, ref: 'Image/os' }), currentTag(projectB, 'Image/os')];
    const all = tags.join(' ');
    for (const leaked of [projectA, projectB, projectA.slice(0, 12), 'payroll', 'Image:os', 'Image/os']) expect(all).not.toContain(leaked);
    expect(useTag(projectA, marker)).toBe(tags[0]);
    expect(currentTag(projectA, marker.ref)).toBe(tags[1]);
    for (const t of tags) expect(t.length).toBeLessThanOrEqual(255);
  });

  it('each project reads back its own uses only; a sealed ref opens only under its project', () => {
    const img = image([useTag(projectA, marker), currentTag(projectA, marker.ref), useTag(projectB, { ...marker, ref: 'Image/os' })]);
    expect(usesBy(img, projectA)).toEqual([{ ref: 'Image/payroll-db', specHash: '1a2b3c4d', tag: useTag(projectA, marker), legacy: false }]);
    expect(usesBy(img, projectB).map((u) => u.ref)).toEqual(['Image/os']);
    expect(isCurrentFor(img, projectA, marker.ref)).toBe(true);
    expect(isCurrentFor(img, projectB, 'Image/os')).toBe(false);
    expect(openRef(projectB, sealRef(projectA, marker.ref))).toBeUndefined();
    expect(openRef(projectA, sealRef(projectA, marker.ref))).toBe(marker.ref);
    // A tag with A's pseudonym but sealed under B's key opens to nothing: the seal is checked.
    expect(usesBy(image([`kupenstack-use:${projectPseudonym(projectA)}:1a2b3c4d:${sealRef(projectB, 'Image/x')}`]), projectA)).toEqual([]);
  });

  it('tags of the first format (id and name in clear) are still read, and resealed', () => {
    const legacyUse = `kupenstack-use:${projectA}:1a2b3c4d:Image:payroll-db`;
    const legacyCurrent = `kupenstack-current:${projectA}:Image:payroll-db`;
    const img = image([legacyUse, legacyCurrent, `kupenstack-use:${projectB}:ffff0000:Image:os`]);
    expect(usesBy(img, projectA)).toEqual([{ ref: 'Image/payroll-db', specHash: '1a2b3c4d', tag: legacyUse, legacy: true }]);
    expect(isCurrentFor(img, projectA, 'Image/payroll-db')).toBe(true);
    expect(resealing(img, projectA, 'Image/payroll-db')).toEqual({ add: [useTag(projectA, marker), currentTag(projectA, marker.ref)], remove: [legacyUse, legacyCurrent] });
    // Another project's legacy tags are its own to reseal.
    expect(resealing(img, projectA, 'Image/os')).toEqual({ add: [], remove: [] });
  });
});
