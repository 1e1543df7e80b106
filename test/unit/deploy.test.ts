import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { agentCommand } from '../../agent/cli/agent.ts';
import { loadConfig } from '../../agent/sync/config-file.ts';

/** deploy/agent must stay in step with the agent it runs: its config loads, its flags exist, its probes are served. */

const dir = join(import.meta.dirname, '../../deploy/agent');
type Doc = { kind: string; metadata: { name: string }; spec?: Record<string, unknown>; data?: Record<string, string>; automountServiceAccountToken?: boolean; resources?: string[] };
const docs = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Doc));
const byKind = (kind: string): Doc => docs.find((d) => d.kind === kind)!;

interface Container {
  args: string[];
  livenessProbe: { httpGet: { path: string } };
  readinessProbe: { httpGet: { path: string } };
  securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean };
  volumeMounts: { name: string; mountPath: string }[];
}

describe('deploy/agent', () => {
  const pod = (byKind('Deployment').spec as { template: { spec: { containers: Container[]; volumes: { name: string; persistentVolumeClaim?: { claimName: string } }[]; automountServiceAccountToken: boolean; securityContext: { runAsNonRoot: boolean } } } }).template.spec;
  const agent = pod.containers[0]!;

  it('lists every manifest in the kustomization', () => {
    const listed = byKind('Kustomization').resources!;
    expect(listed.sort()).toEqual(readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort());
  });

  it('ships a kupenstack.yaml the agent accepts, whose credential files are mounted', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'ks-deploy-'));
    try {
      const file = join(scratch, 'kupenstack.yaml');
      const text = byKind('ConfigMap').data!['kupenstack.yaml']!;
      writeFileSync(file, text);
      const config = loadConfig(file);
      expect(config.syncs?.length).toBe(1);
      const mounts = agent.volumeMounts.map((m) => m.mountPath);
      const paths = text.match(/\/etc\/kupenstack\/[a-z/.-]+/g) ?? [];
      expect(paths.length).toBeGreaterThan(0);
      for (const path of paths) expect(mounts.some((m) => path.startsWith(`${m}/`))).toBe(true);
      // The state (create journal included) outlives the pod: its volume is the claim shipped here.
      const stateMount = agent.volumeMounts.find((m) => config.stateDir.startsWith(`${m.mountPath}/`));
      expect(stateMount).toBeDefined();
      const volume = pod.volumes.find((v) => v.name === stateMount!.name);
      expect(volume?.persistentVolumeClaim?.claimName).toBe(byKind('PersistentVolumeClaim').metadata.name);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('passes only flags `kupenstack agent` knows, and probes the paths its server answers', () => {
    const known = new Set(agentCommand().options.map((o) => o.long));
    const flags = agent.args.filter((a) => a.startsWith('--'));
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) expect(known.has(flag)).toBe(true);
    expect(agent.args[0]).toBe('agent');
    const server = readFileSync(join(import.meta.dirname, '../../agent/standalone/server.ts'), 'utf8');
    for (const path of [agent.livenessProbe.httpGet.path, agent.readinessProbe.httpGet.path]) expect(server).toContain(`'${path}'`);
  });

  it('runs with least privilege: no Kubernetes token, non-root, read-only root file system', () => {
    expect(byKind('ServiceAccount').automountServiceAccountToken).toBe(false);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(agent.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(docs.some((d) => d.kind === 'Role' || d.kind === 'ClusterRole' || d.kind === 'RoleBinding' || d.kind === 'ClusterRoleBinding')).toBe(false);
  });
});
