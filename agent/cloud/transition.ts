import type { OpenStackCloudSpec, OpenStackCloudStatus } from '../model/kinds.generated.ts';
import { CHARTS } from './catalogue.ts';
import { fastForward, findRelease, label, releaseStep } from './releases.ts';
import { chartPath, declaredChart, enabledCharts } from './spec.ts';

/**
 * The rules of a release change, checked between the revision the cloud is at (the base:
 * `plan --base`, `validate --base`, or the deployed release in status) and the new one,
 * before anything is applied (Rockoon's admission rules, as validation errors):
 * no downgrade; one step (the next release, or SLURP → next SLURP, or a fast-forward path of
 * releases.ts that names every enabled chart); nothing else in the spec changes in the same revision; no pinned images while upgrading; no new target
 * while an upgrade runs.
 */
export interface TransitionFinding {
  code: string;
  path: (string | number)[];
  message: string;
}

export interface TransitionBase {
  /** The base revision's spec, when there is one. */
  spec?: OpenStackCloudSpec;
  /** The cloud's status (in the cluster): the deployed release and a running upgrade. */
  status?: OpenStackCloudStatus;
}

export function checkTransition(base: TransitionBase, head: OpenStackCloudSpec): TransitionFinding[] {
  const out: TransitionFinding[] = [];
  const running = base.status?.upgrade;
  if (running && running.phase !== 'Succeeded' && running.to !== undefined && running.to !== head.release) {
    out.push({
      code: 'cloud.upgrade-running',
      path: ['spec', 'release'],
      message:
        `an upgrade ${running.from ?? '?'} → ${running.to} is ` +
        `${running.phase === 'Failed' ? 'stopped on a failure' : 'running'}${running.step ? ` (at ${running.step})` : ''}; ` +
        `a new release can be declared once it finished: keep release: ${running.to} until then`,
    });
    return out;
  }
  const fromName = base.status?.release || base.spec?.release;
  if (fromName === undefined) return out; // a first install: any known release
  const from = findRelease(fromName);
  const to = findRelease(head.release);
  if (!from || !to) return out; // kind rules report unknown releases
  const step = releaseStep(from, to);
  if (step.kind === 'same') return out;
  if (step.kind === 'downgrade') {
    out.push({
      code: 'cloud.downgrade',
      path: ['spec', 'release'],
      message: `${label(to)} is older than the deployed ${label(from)}; OpenStack database migrations only go forward: restore a backup to go back, or keep release: ${from.series}`,
    });
    return out;
  }
  const ff = step.kind === 'skip-level' ? fastForward(from, to) : undefined;
  if (ff) {
    const missing = enabledCharts(head).filter((c) => ff.charts[c.chart] === undefined);
    if (missing.length > 0) {
      const why = missing.map((c) => `${c.chart}: ${ff.refused[c.chart] ?? 'no fast-forward path checked'}`).join('; ');
      out.push({
        code: 'cloud.fast-forward-refused',
        path: [...chartPath(missing[0]!), 'enabled'],
        message:
          `${label(from)} → ${label(to)} is a fast-forward upgrade that ${missing.map((c) => c.chart).join(', ')} cannot take (${why}); ` +
          `disable ${missing.length === 1 ? 'it' : 'them'} (enabled: false) or go one release at a time`,
      });
      return out;
    }
  } else if (step.kind === 'skip-level') {
    out.push({
      code: 'cloud.skip-level',
      path: ['spec', 'release'],
      message: `${label(from)} → ${label(to)} skips a release; upgrade one step at a time: next ${step.allowed.join(' or ')} (SLURP releases may skip one), then ${to.series} in a later revision`,
    });
    return out;
  }
  if (base.spec) {
    for (const path of changedPaths(base.spec, head, ['spec'])) {
      if (path[1] === 'release') continue;
      out.push({
        code: 'cloud.release-with-changes',
        path,
        message:
          `${path.join('.')} changes in the same revision as release ${from.series} → ${to.series}; an upgrade changes the release only: ` +
          `move this change to a revision of its own (before or after the upgrade)`,
      });
    }
  }
  for (const chart of CHARTS) {
    const pins = declaredChart(head, chart)?.images;
    if (pins && Object.keys(pins).length > 0) {
      out.push({
        code: 'cloud.pinned-images',
        path: [...chartPath(chart), 'images'],
        message:
          `${chart.chart} pins images (${Object.keys(pins).join(', ')}) in the revision that upgrades to ${to.series}; ` +
          `the release decides the images of an upgrade: remove the pins for the upgrade, pin again afterwards`,
      });
    }
  }
  return out;
}

/** Paths (under `prefix`) where two plain JSON values differ, as deep as both are objects. */
function changedPaths(a: unknown, b: unknown, prefix: string[]): string[][] {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObj(a) && isObj(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) => changedPaths(a[k], b[k], [...prefix, k]));
  }
  return JSON.stringify(a) === JSON.stringify(b) ? [] : [prefix];
}
