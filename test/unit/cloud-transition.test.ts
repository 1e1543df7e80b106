import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findRelease, nextTargets, releaseStep } from '../../agent/cloud/releases.ts';
import { loadSchemaRegistry } from '../../agent/schema/registry.ts';
import { checkPath } from '../../agent/validate/check-path.ts';
import { checkTransitions } from '../../agent/validate/transitions.ts';

/**
 * A release change of the OpenStackCloud is judged against the revision the cloud is at:
 * one step forward (or SLURP → SLURP), alone, without pinned images; positioned file:line.
 */
const registry = loadSchemaRegistry();
const root = mkdtempSync(join(tmpdir(), 'ks-cloud-transition-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const cli = join(import.meta.dirname, '../../agent/cli/main.ts');

const cloud = (spec: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: OpenStackCloud\nmetadata: {name: cloud}\nspec:\n${spec}`;
let n = 0;

async function transitionErrors(base: string, head: string): Promise<string[]> {
  const dir = join(root, String(n++));
  for (const [side, text] of [['base', base], ['head', head]] as const) {
    mkdirSync(join(dir, side), { recursive: true });
    writeFileSync(join(dir, side, 'cloud.yaml'), text);
  }
  const [b, h] = [await checkPath(join(dir, 'base'), registry), await checkPath(join(dir, 'head'), registry)];
  expect([...b.diagnostics, ...h.diagnostics]).toEqual([]);
  return checkTransitions(b.validated.manifests, h.validated.manifests, { label: h.label }).map((d) => `${d.code} ${d.file.slice(dir.length + 1)}:${d.line}:${d.column} ${d.message}`);
}

describe('release steps', () => {
  it('allow the next release, and SLURP → next SLURP only from a SLURP release', () => {
    const r = (s: string) => findRelease(s)!;
    expect(releaseStep(r('2025.1'), r('2025.2'))).toEqual({ kind: 'upgrade', slurp: false });
    expect(releaseStep(r('2024.1'), r('2025.1'))).toEqual({ kind: 'upgrade', slurp: true });
    expect(releaseStep(r('caracal'), r('epoxy'))).toEqual({ kind: 'upgrade', slurp: true });
    expect(releaseStep(r('2024.2'), r('2025.2'))).toEqual({ kind: 'skip-level', allowed: ['2025.1'] });
    expect(releaseStep(r('2024.1'), r('2025.2'))).toEqual({ kind: 'skip-level', allowed: ['2024.2', '2025.1'] });
    expect(releaseStep(r('2025.2'), r('2025.1'))).toEqual({ kind: 'downgrade' });
    expect(nextTargets(r('2025.2')).map((x) => x.series)).toEqual(['2026.1']);
  });
});

describe('an OpenStackCloud release change', () => {
  it('one step forward, alone, is valid', async () => {
    expect(await transitionErrors(cloud('  release: "2025.1"\n  size: small\n'), cloud('  release: "2025.2"\n  size: small\n'))).toEqual([]);
    expect(await transitionErrors(cloud('  release: "2024.1"\n'), cloud('  release: "2025.1"\n'))).toEqual([]);
  });

  it('a skip-level upgrade names the release to go to first', async () => {
    expect(await transitionErrors(cloud('  release: "2024.2"\n'), cloud('  release: "2025.2"\n'))).toEqual([
      'cloud.skip-level head/cloud.yaml:5:12 2024.2 (dalmatian) → 2025.2 (flamingo) skips a release; upgrade one step at a time: next 2025.1 (SLURP releases may skip one), then 2025.2 in a later revision',
    ]);
  });

  it('2022.2 → 2025.1 is the fast-forward path of the charts checked for it, and refused, naming the chart and why, when a chart that was not checked is on', async () => {
    const services = '  services:\n    cinder: {enabled: false}\n    horizon: {enabled: false}\n';
    expect(await transitionErrors(cloud(`  release: "2022.2"\n${services}`), cloud(`  release: "2025.1"\n${services}`))).toEqual([]);
    expect(await transitionErrors(cloud('  release: zed\n  services:\n    horizon: {enabled: false}\n'), cloud('  release: epoxy\n  services:\n    horizon: {enabled: false}\n'))).toEqual([
      'cloud.fast-forward-refused head/cloud.yaml:7:5 2022.2 (zed) → 2025.1 (epoxy) is a fast-forward upgrade that cinder cannot take (cinder: not checked: upgrade through 2023.1 and 2024.1); disable it (enabled: false) or go one release at a time',
    ]);
    // No path from 2022.2 to 2024.2: the SLURP rule speaks.
    expect(await transitionErrors(cloud(`  release: "2022.2"\n${services}`), cloud(`  release: "2024.2"\n${services}`))).toEqual([
      'cloud.skip-level head/cloud.yaml:5:12 2022.2 (zed) → 2024.2 (dalmatian) skips a release; upgrade one step at a time: next 2023.1 (SLURP releases may skip one), then 2024.2 in a later revision',
    ]);
  });

  it('a downgrade is refused', async () => {
    const errors = await transitionErrors(cloud('  release: "2025.2"\n'), cloud('  release: "2025.1"\n'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^cloud\.downgrade head\/cloud\.yaml:5:12 2025\.1 \(epoxy\) is older than the deployed 2025\.2/);
  });

  it('other changes in the same revision are each named at their line', async () => {
    const errors = await transitionErrors(
      cloud('  release: "2025.1"\n  services:\n    nova: {replicas: 1}\n'),
      cloud('  release: "2025.2"\n  services:\n    nova: {replicas: 3}\n  region: RegionTwo\n'),
    );
    expect(errors.map((e) => e.split(' ').slice(0, 2).join(' '))).toEqual(['cloud.release-with-changes head/cloud.yaml:7:22', 'cloud.release-with-changes head/cloud.yaml:8:11']);
    expect(errors[0]).toContain('spec.services.nova.replicas changes in the same revision as release 2025.1 → 2025.2');
  });

  it('pinned images are refused during an upgrade, allowed otherwise', async () => {
    const pinned = '  services:\n    keystone:\n      images: {keystone_api: registry.example.com/keystone:fix1}\n';
    expect(await transitionErrors(cloud(`  release: "2025.1"\n${pinned}`), cloud(`  release: "2025.1"\n${pinned}`))).toEqual([]);
    const errors = await transitionErrors(cloud(`  release: "2025.1"\n${pinned}`), cloud(`  release: "2025.2"\n${pinned}`));
    expect(errors.map((e) => e.split(' ').slice(0, 2).join(' '))).toEqual(['cloud.pinned-images head/cloud.yaml:8:15']);
  });

  it('a new target while an upgrade runs is refused, from the status (no base revision)', async () => {
    {
      const dir = join(root, String(n++));
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'cloud.yaml'), cloud('  release: "2026.1"\n'));
      const h = await checkPath(dir, registry);
      const errors = checkTransitions(undefined, h.validated.manifests, { status: { release: '2025.1', upgrade: { from: '2025.1', to: '2025.2', phase: 'Upgrading', step: 'nova' } } });
      expect(errors.map((d) => d.code)).toEqual(['cloud.upgrade-running']);
      expect(errors[0]!.message).toContain('2025.1 → 2025.2 is running (at nova)');
    }
  });
});

describe('validate --base and plan --base', () => {
  const repo = join(root, 'repo');
  const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@kupenstack.invalid', '-c', 'user.name=t', '-c', 'init.defaultBranch=main', ...args], { cwd: repo, encoding: 'utf8' });
  const run = (args: string[]) => spawnSync(process.execPath, [cli, ...args], { cwd: repo, encoding: 'utf8', timeout: 60_000 });

  it('report a skip-level upgrade with the file and line, and exit 1', () => {
    mkdirSync(join(repo, 'cloud'), { recursive: true });
    git('init', '-q');
    writeFileSync(join(repo, 'cloud', 'cloud.yaml'), cloud('  release: "2024.2"\n'));
    git('add', '.');
    git('commit', '-qm', 'base');
    writeFileSync(join(repo, 'cloud', 'cloud.yaml'), cloud('  release: "2025.2"\n'));

    const plain = run(['validate']);
    expect(plain.status, plain.stderr).toBe(0);
    const v = run(['validate', '--base', 'HEAD']);
    expect(v.status).toBe(1);
    expect(v.stdout).toContain('cloud/cloud.yaml:5:12: error [cloud.skip-level] OpenStackCloud/cloud at spec.release: 2024.2 (dalmatian) → 2025.2 (flamingo) skips a release');

    git('commit', '-qam', 'head');
    const p = run(['plan', '--base', 'HEAD~1']);
    expect(p.status).toBe(1);
    expect(p.stderr).toContain('HEAD:cloud/cloud.yaml:5:12: error [cloud.skip-level]');
  }, 180_000);
});
