import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Issue 27, item 6: lines over 200 characters in agent/, oci/ and lib/ are
 * wrapped. Those not wrapped yet are listed here, per file, with their count:
 * a file with one more fails (wrap the new line), a file with one fewer fails
 * too (lower its count here), so the list only shrinks.
 */

const root = join(import.meta.dirname, '..', '..');
const limit = 200;

/** What is left to wrap, per file: the count of its lines over the limit. */
const notWrappedYet: Record<string, number> = {
  'agent/act/apply.ts': 4,
  'agent/act/bulk.ts': 1,
  'agent/act/context.ts': 1,
  'agent/act/execute.ts': 3,
  'agent/act/heal.ts': 1,
  'agent/act/landing.ts': 1,
  'agent/act/lost-create.ts': 1,
  'agent/act/observe.ts': 2,
  'agent/act/partial.ts': 2,
  'agent/act/projects.ts': 1,
  'agent/act/prune.ts': 1,
  'agent/act/reconcile-node.ts': 3,
  'agent/act/refusals.ts': 2,
  'agent/cli/agent.ts': 1,
  'agent/cli/apply.ts': 5,
  'agent/cli/controller.ts': 6,
  'agent/cli/egress-options.ts': 2,
  'agent/cli/image-export.ts': 1,
  'agent/cli/image-import.ts': 4,
  'agent/cli/image-push.ts': 1,
  'agent/cli/kube-options.ts': 1,
  'agent/cli/plan.ts': 4,
  'agent/cli/reconcile.ts': 1,
  'agent/cli/verify-policy.ts': 1,
  'agent/cloud/chart-source.ts': 5,
  'agent/cloud/diff.ts': 1,
  'agent/cloud/render.ts': 1,
  'agent/cloud/store.ts': 2,
  'agent/cloud/transition.ts': 5,
  'agent/cloud/upgrade.ts': 1,
  'agent/cloud/values.ts': 3,
  'agent/cloud/window.ts': 1,
  'agent/config/syncs.ts': 6,
  'agent/controller/cloud-status.ts': 1,
  'agent/controller/controller.ts': 6,
  'agent/controller/create-journal.ts': 1,
  'agent/controller/event-sink.ts': 1,
  'agent/controller/health.ts': 2,
  'agent/controller/leader.ts': 2,
  'agent/controller/loops.ts': 1,
  'agent/controller/namespace-run.ts': 7,
  'agent/controller/paused.ts': 2,
  'agent/controller/process.ts': 8,
  'agent/controller/registry-hook.ts': 2,
  'agent/controller/shards.ts': 1,
  'agent/controller/status-store.ts': 1,
  'agent/export/export.ts': 1,
  'agent/export/write.ts': 1,
  'agent/gitops/cluster-apply.ts': 2,
  'agent/gitops/status-store.ts': 3,
  'agent/gitops/sync-client.ts': 1,
  'agent/gitops/sync-loop.ts': 5,
  'agent/glance/export.ts': 2,
  'agent/glance/registry-source.ts': 1,
  'agent/glance/shared-project.ts': 2,
  'agent/glance/versions.ts': 7,
  'agent/hooks/git-webhook.ts': 3,
  'agent/hooks/registry-hook.ts': 3,
  'agent/kinds/flavor.ts': 2,
  'agent/kinds/floatingip.ts': 1,
  'agent/kinds/image/adapter.ts': 1,
  'agent/kinds/image/oci-poll.ts': 1,
  'agent/kinds/image/oci.ts': 2,
  'agent/kinds/image/shared.ts': 3,
  'agent/kinds/image/url.ts': 1,
  'agent/kinds/keypair.ts': 2,
  'agent/kinds/network.ts': 1,
  'agent/kinds/neutron-scope.ts': 2,
  'agent/kinds/neutron.ts': 1,
  'agent/kinds/openstackcloud.rules.ts': 4,
  'agent/kinds/port.export.ts': 1,
  'agent/kinds/port.rules.ts': 2,
  'agent/kinds/port.ts': 1,
  'agent/kinds/projectquota.ts': 1,
  'agent/kinds/securitygroup.export.ts': 1,
  'agent/kinds/securitygroup.rules.ts': 2,
  'agent/kinds/securitygroup.ts': 3,
  'agent/kinds/servergroup.rules.ts': 1,
  'agent/kinds/servergroup.ts': 1,
  'agent/kinds/subnet.rules.ts': 2,
  'agent/kinds/subnet.ts': 1,
  'agent/kinds/virtualmachine.rules.ts': 1,
  'agent/kinds/virtualmachine/adapter.ts': 1,
  'agent/kinds/virtualmachine/remote.ts': 1,
  'agent/kinds/volume.export.ts': 1,
  'agent/kinds/volume.rules.ts': 2,
  'agent/kinds/volume.ts': 2,
  'agent/load/files.ts': 1,
  'agent/model/kinds.generated.ts': 2,
  'agent/net/egress-gate.ts': 1,
  'agent/notify/notifier.ts': 1,
  'agent/notify/providers/gitlab.ts': 1,
  'agent/openstack/session.ts': 1,
  'agent/openstack/transport.ts': 1,
  'agent/plan/between-revisions.ts': 1,
  'agent/plan/decide.ts': 3,
  'agent/plan/plan.ts': 1,
  'agent/plan/render/json.ts': 1,
  'agent/plan/render/markdown.ts': 2,
  'agent/plan/render/text.ts': 1,
  'agent/plan/saved.ts': 3,
  'agent/policy/admission.ts': 2,
  'agent/policy/member-policy.ts': 2,
  'agent/schema/crd.ts': 1,
  'agent/schema/structural.ts': 1,
  'agent/schema/typescript.ts': 1,
  'agent/secrets/env-file.ts': 1,
  'agent/source/credentials.ts': 3,
  'agent/source/git-errors.ts': 2,
  'agent/source/git-http.ts': 1,
  'agent/source/git-url.ts': 1,
  'agent/source/git.ts': 5,
  'agent/source/source-path.ts': 1,
  'agent/source/verify-signature.ts': 7,
  'agent/standalone/agent.ts': 3,
  'agent/standalone/apply-path.ts': 2,
  'agent/standalone/apply-step.ts': 2,
  'agent/standalone/revision-cloud.ts': 2,
  'agent/standalone/server.ts': 1,
  'agent/standalone/sync-runner.ts': 2,
  'agent/sync/conditions.ts': 1,
  'agent/sync/fetch-step.ts': 2,
  'agent/sync/sync-source.ts': 1,
  'agent/telemetry/metrics.ts': 4,
  'agent/validate/consistency.ts': 1,
  'agent/validate/git-revision.ts': 1,
  'agent/validate/names.ts': 1,
  'agent/validate/references.ts': 2,
  'agent/validate/schema-check.ts': 4,
  'lib/disk/sniff.ts': 2,
  'oci/auth/bearer.ts': 1,
  'oci/auth/docker-config.ts': 1,
  'oci/blob.ts': 2,
  'oci/client.ts': 2,
  'oci/cosign-verify.ts': 5,
  'oci/formats/containerdisk.ts': 1,
  'oci/formats/detect.ts': 1,
  'oci/formats/vmimage-annotations.ts': 1,
  'oci/push.ts': 2,
  'oci/registry-disk-source.ts': 1,
  'oci/sniff-gate.ts': 1,
  'oci/trusted-root.ts': 1,
  'oci/upload.ts': 1,
};

/** The lines of a source over the limit, as `file:line (N characters)`. */
function longLines(file: string, text: string): string[] {
  return text.split('\n').flatMap((line, i) => (line.length > limit ? [`${file}:${i + 1} (${line.length} characters)`] : []));
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('lines over 200 characters', () => {
  it('agent/, oci/ and lib/ have no more than the list of what is left to wrap, and the list is exact', () => {
    const files = ['agent', 'oci', 'lib'].flatMap((d) => tsFiles(join(root, d))).map((f) => relative(root, f));
    expect(files.length, 'the sources found').toBeGreaterThan(200);
    const counts: Record<string, number> = {};
    for (const f of files) {
      const n = longLines(f, readFileSync(join(root, f), 'utf8')).length;
      if (n > 0) counts[f] = n;
    }
    expect(counts, 'a file with more long lines: wrap them; with fewer: lower its count in notWrappedYet').toEqual(notWrappedYet);
  });

  it('finds a planted long line and leaves one of exactly 200 characters alone', () => {
    const planted = ['const short = 1;', `const long = '${'x'.repeat(190)}';`, 'x'.repeat(200)].join('\n');
    expect(longLines('agent/planted.ts', planted)).toEqual(['agent/planted.ts:2 (206 characters)']);
  });
});
