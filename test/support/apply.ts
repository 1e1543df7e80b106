import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { applyPath, planPath, type ApplyOutcome, type PlanOutcome } from '../../agent/standalone/apply-path.ts';
import type { SecretResolver } from '../../agent/secrets/resolver.ts';
import { ownedProjects } from '../../agent/act/projects.ts';
import { defaultConfig, type AgentConfig } from '../../agent/config/config.ts';
import { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import type { ApiCounters } from '../../agent/openstack/counters.ts';
import { ImageMemory } from '../../agent/kinds/kit/image-memory.ts';
import { testCloudName } from './context.ts';

/** A scratch owner with its own repo folder and state dir, and a way to wipe everything it created. */
export class Workspace {
  readonly owner = `w${randomBytes(4).toString('hex')}`;
  readonly dir = mkdtempSync(join(tmpdir(), 'ks-ws-'));
  readonly repo = join(this.dir, 'repo');
  readonly config: AgentConfig = { ...defaultConfig, owner: this.owner, stateDir: join(this.dir, 'state'), projectPrefix: `${this.owner}-`, readyTimeoutSeconds: 120 };
  readonly cloud = OpenStackCloud.fromCloudsYaml(testCloudName);
  readonly log: string[] = [];
  /** What the Image kind remembers between runs (resolutions, registry clients), kept for the workspace's life as the agent keeps it for its state dir. */
  readonly images = new ImageMemory();

  constructor() {
    mkdirSync(this.repo, { recursive: true });
  }

  write(files: Record<string, string>): void {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(this.repo, path)), { recursive: true });
      writeFileSync(join(this.repo, path), text);
    }
  }

  read(path: string): string {
    return readFileSync(join(this.repo, path), 'utf8');
  }

  remove(path: string): void {
    rmSync(join(this.repo, path), { force: true });
  }

  /** Secrets the runs read and write (an ApplicationCredential's), as `kupenstack apply` passes its secretsDir's; none by default. */
  secrets?: SecretResolver;

  /** `openstack`: the client the run writes through (a gated one, OpenStackCloud.gated); default: one of its own. */
  apply(options: { prune?: boolean; allowMassDelete?: boolean; path?: string; counters?: ApiCounters; openstack?: OpenStackCloud } = {}): Promise<ApplyOutcome> {
    return applyPath({
      path: options.path ?? this.repo,
      cloud: testCloudName,
      config: this.config,
      prune: options.prune ?? false,
      allowMassDelete: options.allowMassDelete ?? false,
      log: (l) => this.log.push(l),
      images: this.images,
      ...(options.counters ? { counters: options.counters } : {}),
      ...(options.openstack ? { openstack: options.openstack } : {}),
      ...(this.secrets ? { secrets: this.secrets } : {}),
    });
  }

  plan(): Promise<PlanOutcome> {
    return planPath({ path: this.repo, cloud: testCloudName, config: this.config, prune: true, allowMassDelete: true, log: (l) => this.log.push(l), images: this.images, ...(this.secrets ? { secrets: this.secrets } : {}) });
  }

  /** Prunes everything this owner created, then deletes its projects. */
  async dispose(): Promise<void> {
    rmSync(this.repo, { recursive: true, force: true });
    mkdirSync(this.repo);
    const outcome = await this.apply({ prune: true, allowMassDelete: true });
    for (const p of await ownedProjects(this.cloud, this.owner)) {
      // Neutron keeps a project's "default" security group after the project is gone.
      const network = this.cloud.client('network');
      for (const g of await network.list<{ id: string }>('/security-groups', 'security_groups', { project_id: p.id })) await network.remove(`/security-groups/${g.id}`);
      await this.cloud.identity.call('PATCH', `/projects/${p.id}`, { json: { project: { enabled: false } } });
      await this.cloud.identity.remove(`/projects/${p.id}`);
    }
    rmSync(this.dir, { recursive: true, force: true });
    if (outcome.report?.errors.length) throw new Error(`cleanup failed: ${outcome.report.errors.map((e) => e.message).join('; ')}`);
  }
}

export const manifestHead = (kind: string, name: string, ns: string): string => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n`;
