import { loadCloud, type CloudConfig } from './clouds.ts';
import { ApiCounters } from './counters.ts';
import { CloudConfigError } from './errors.ts';
import { ServiceClient, type ServiceType } from './service.ts';
import { Session, type Scope } from './session.ts';
import type { WriteGate } from './transport.ts';

/** The compute microversion we speak: tags on create (2.52), flavor descriptions (2.55), rebuild user data (2.57). */
const wantedComputeVersion = [2, 90] as const;
const minimumComputeVersion = [2, 57] as const;

export interface ProjectApis {
  projectId: string;
  compute: ServiceClient;
  network: ServiceClient;
  image: ServiceClient;
  volume: ServiceClient;
}

/** An OpenStack cloud: the agent's own (admin) scope, and project scopes on demand. */
export class OpenStackCloud {
  readonly session: Session;
  /**
   * The cloud this one is a gated view of (gated), or itself: what is kept per cloud (the projects known,
   * the bulks in flight, the compute microversion) is kept on it, so every view of one cloud shares it.
   */
  readonly base: OpenStackCloud;
  private computeVersion: Promise<string> | undefined;
  private readonly projects = new Map<string, Promise<ProjectApis>>();

  /** `from`: what a gated view is made of (gated). */
  constructor(config: CloudConfig, counters = new ApiCounters(), from?: { session: Session; base: OpenStackCloud }) {
    this.session = from?.session ?? new Session(config, counters);
    this.base = from?.base ?? this;
  }

  /**
   * This cloud, each of its writes (not its reads, nor a token request) waiting for `gate` first, after any
   * gate it has already: ORC's actuators take their client as an argument, and so does the engine. The
   * controller hands the engine its cloud gated by the run's finalizers; a create, gated by its journal line.
   */
  gated(gate: WriteGate): OpenStackCloud {
    return new OpenStackCloud(this.config, this.counters, { session: this.session.gated(gate), base: this.base });
  }

  static fromCloudsYaml(name: string, file?: string, counters?: ApiCounters): OpenStackCloud {
    return new OpenStackCloud(loadCloud(name, file), counters);
  }

  get counters(): ApiCounters {
    return this.session.counters;
  }

  get config(): CloudConfig {
    return this.session.cloud;
  }

  client(service: ServiceType, scope: Scope = { default: true }, headers: Record<string, string> = {}): ServiceClient {
    return new ServiceClient(this.session, scope, service, headers);
  }

  /** Whether the catalog lists a service for the cloud's interface and region (a cloud without Cinder has no volumev3). */
  async hasService(type: ServiceType): Promise<boolean> {
    const token = await this.session.token({ default: true });
    try {
      this.session.endpoint(token, type);
      return true;
    } catch (err) {
      if (err instanceof CloudConfigError) return false;
      throw err;
    }
  }

  get identity(): ServiceClient {
    return this.client('identity');
  }

  /** The agent's own user id, project and roles there (from its default-scope token). */
  async whoami(): Promise<{ userId: string; projectId?: string; roles: readonly { id: string; name: string }[] }> {
    const t = await this.session.token({ default: true });
    return { userId: t.userId, projectId: t.projectId, roles: t.roles };
  }

  async computeHeaders(): Promise<Record<string, string>> {
    const base = this.base;
    base.computeVersion ??= base.negotiateCompute();
    const v = await base.computeVersion;
    return { 'openstack-api-version': `compute ${v}`, 'x-openstack-nova-api-version': v };
  }

  /** Nova admin calls (flavors, quotas) use the agent's own scope. */
  async adminCompute(): Promise<ServiceClient> {
    return this.client('compute', { default: true }, await this.computeHeaders());
  }

  /** Every service with the agent's own (admin) scope: cloud-wide lists across projects. */
  async adminApis(): Promise<Omit<ProjectApis, 'projectId'>> {
    const scope = { default: true } as const;
    return {
      compute: await this.adminCompute(),
      network: this.client('network', scope),
      image: this.client('image', scope),
      volume: this.client('volumev3', scope),
    };
  }

  forProject(projectId: string): Promise<ProjectApis> {
    let p = this.projects.get(projectId);
    if (!p) {
      p = (async () => {
        const scope = { projectId };
        return {
          projectId,
          compute: this.client('compute', scope, await this.computeHeaders()),
          network: this.client('network', scope),
          image: this.client('image', scope),
          volume: this.client('volumev3', scope),
        };
      })();
      this.projects.set(projectId, p);
    }
    return p;
  }

  private async negotiateCompute(): Promise<string> {
    const compute = this.client('compute');
    const base = await compute.base();
    const root = base.replace(/\/v2(\.1)?(\/[^/]*)?$/, '');
    const doc = await compute.get<{ version?: { version?: string }; versions?: { id: string; version?: string }[] }>(`${root}/v2.1`);
    const max = doc.version?.version ?? doc.versions?.find((v) => v.id === 'v2.1')?.version ?? '';
    const [major = 0, minor = 0] = max.split('.').map(Number);
    if (major < minimumComputeVersion[0] || (major === minimumComputeVersion[0] && minor < minimumComputeVersion[1])) {
      throw new CloudConfigError(
        `Nova of cloud "${this.config.name}" supports microversions up to ${max || 'unknown'}; KupenStack needs ${minimumComputeVersion.join('.')} or later`,
      );
    }
    const chosen = minor < wantedComputeVersion[1] ? minor : wantedComputeVersion[1];
    return `2.${chosen}`;
  }
}
