import * as k8s from '@kubernetes/client-node';
import { Counter, Gauge, type Registry } from 'prom-client';
import { CloudUnreachableError, sourceOf, type ConnectionSource, type InstalledCloudsSecret } from '../../kinds/openstackcloudconnection/index.ts';
import { mergePatch } from '../../kube/client.ts';
import { isKubeStatus } from '../../kube/errors.ts';
import { rewatchOnError } from '../../kube/rewatch.ts';
import type { OpenStackCloudConnection } from '../../model/kinds.generated.ts';
import type { OpenStackCloud } from '../../openstack/cloud.ts';
import { group, version } from '../../schema/registry.ts';
import type { SecretResolver } from '../../secrets/resolver.ts';
import { setCondition, type Condition } from '../../status/conditions.ts';
import { ClockedCounters } from '../call-counts.ts';
import { cloudFromSecret } from './cloud-from-secret.ts';
import { CloudHealth, defaultHealthTimings, type CloudHealthTimings } from './cloud-health.ts';
import { probeCloud, type ProbeResult } from './cloud-probe.ts';

const plural = 'openstackcloudconnections';

export interface CloudConnectionsOptions {
  kc: k8s.KubeConfig;
  secrets: SecretResolver;
  log: (line: string) => void;
  /** Only a replica that acts writes the connections' status; every replica probes (its own runs need the answer). */
  acting: () => boolean;
  /** The cloud came back (or was found usable for the first time): its namespaces run now. */
  onUp: (connection: string) => void;
  /** The cloud went down: its namespaces' runs in flight stop (their calls would only time out). */
  onDown: (connection: string, error: CloudUnreachableError) => void;
  /** Where the `kupenstack_cloud_up{connection,cloud}` gauge goes (the controller's /metrics). */
  registry?: Registry;
  timings?: CloudHealthTimings;
}

/** One connection as this replica knows it: its spec, its own OpenStack client (token cache, limits, catalog) and health. */
interface Connection {
  name: string;
  generation: number;
  object: OpenStackCloudConnection;
  /** The client of the source last resolved (one per Secret content: a rotated Secret gives a new one). */
  client?: { key: string; cloud: () => Promise<OpenStackCloud> };
  source?: ConnectionSource;
  /** Keystone's URL as the clouds.yaml gives it (status: never a credential). */
  authUrl?: string;
  health: CloudHealth;
  timer?: NodeJS.Timeout;
  /** The probe in flight: a run of a namespace whose cloud was never probed waits for it. */
  probing?: Promise<void>;
  /** The status last written, so a probe that finds the same writes nothing. */
  written?: string;
}

/**
 * The in-cluster controller's OpenStackCloudConnections (issue 48): watched, each with its own
 * OpenStack client and probed on its own timer (cloud-health.ts: every 10 s while it answers, backing
 * off from 1 s to 30 s while it does not). A namespace's run asks `cloudOf` for its connection's
 * client: at once while the cloud is up, a CloudUnreachableError without any call while it is down, so
 * a cloud that is down holds no worker and delays no other cloud's namespaces.
 */
export class CloudConnections {
  private readonly opts: CloudConnectionsOptions;
  private readonly custom: k8s.CustomObjectsApi;
  private readonly connections = new Map<string, Connection>();
  private informer?: k8s.Informer<k8s.KubernetesObject> & k8s.ObjectCache<k8s.KubernetesObject>;
  private stopped = false;
  private readonly up?: Gauge<'connection' | 'cloud'>;
  private readonly calls?: Counter<'connection' | 'cloud' | 'service' | 'method' | 'status'>;

  constructor(opts: CloudConnectionsOptions) {
    this.opts = opts;
    this.custom = opts.kc.makeApiClient(k8s.CustomObjectsApi);
    if (opts.registry)
      this.up = new Gauge({
        name: 'kupenstack_cloud_up',
        help: "1 while the connection's cloud answers and takes its credentials, 0 while it does not (reason in the connection's status)",
        labelNames: ['connection', 'cloud'],
        registers: [opts.registry],
      });
    if (opts.registry)
      this.calls = new Counter({
        name: 'kupenstack_cloud_api_calls_total',
        help: "OpenStack API calls made through a connection's client, by its answer's status (AUTH: a token request)",
        labelNames: ['connection', 'cloud', 'service', 'method', 'status'],
        registers: [opts.registry],
      });
  }

  /** Watches the connections; resolves once they are listed (a namespace's first run then finds its connection). */
  async start(): Promise<void> {
    const list = async (): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> =>
      (await this.custom.listClusterCustomObject({ group, version, plural })) as k8s.KubernetesListObject<k8s.KubernetesObject>;
    const informer = k8s.makeInformer(this.opts.kc, `/apis/${group}/${version}/${plural}`, list);
    informer.on('add', (o) => this.onConnection(o as OpenStackCloudConnection & k8s.KubernetesObject));
    informer.on('update', (o) => this.onConnection(o as OpenStackCloudConnection & k8s.KubernetesObject));
    informer.on('delete', (o) => this.onGone(o.metadata?.name ?? ''));
    rewatchOnError(informer, plural, this.opts.log, () => this.stopped);
    this.informer = informer;
    // Without the CRD (an upgrade that has not applied it yet) or the right to list it, the default cloud still runs; the watch retries.
    await informer.start().catch((err: unknown) => this.opts.log(`cloud   OpenStackCloudConnections not listed (retried): ${(err as Error).message}`));
    this.opts.log(`watching OpenStackCloudConnections: ${this.connections.size} known`);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.connections.values()) clearTimeout(c.timer);
    await this.informer?.stop().catch(() => {});
  }

  /**
   * The OpenStack client of a connection's cloud, for one namespace's run. Throws CloudUnreachableError
   * (no call made) when there is no such connection or its last probe failed; waits for the first probe.
   */
  async cloudOf(name: string): Promise<OpenStackCloud> {
    const c = this.connections.get(name);
    if (!c) throw new CloudUnreachableError(name, 'NoSuchConnection', `no OpenStackCloudConnection named ${name} (the namespace's label kupenstack.io/cloud)`);
    if (c.health.state.kind === 'unknown') await (c.probing ?? this.probe(c));
    const state = c.health.state;
    if (state.kind === 'down') throw new CloudUnreachableError(name, state.reason, state.message);
    if (!c.client) throw new CloudUnreachableError(name, 'CloudNotReady', 'not probed yet');
    return c.client.cloud();
  }

  /** Whether a connection's cloud answered its last probe (tests, the view). */
  stateOf(name: string): CloudHealth['state'] | undefined {
    return this.connections.get(name)?.health.state;
  }

  private onConnection(object: OpenStackCloudConnection & k8s.KubernetesObject): void {
    const name = object.metadata.name;
    const generation = object.metadata.generation ?? 0;
    const known = this.connections.get(name);
    if (known && known.generation === generation) {
      known.object = object;
      return;
    }
    if (known) clearTimeout(known.timer);
    // A changed spec starts afresh: a new client (tokens of the old cloud are not reused) and a probe now.
    const c: Connection = { name, generation, object, health: known?.health ?? new CloudHealth(this.opts.timings ?? defaultHealthTimings) };
    c.health.reset();
    this.connections.set(name, c);
    void this.probe(c);
  }

  private onGone(name: string): void {
    const c = this.connections.get(name);
    if (!c) return;
    clearTimeout(c.timer);
    this.connections.delete(name);
    if (c.source) this.up?.remove({ connection: name, cloud: c.source.cloud });
    this.opts.log(`cloud   connection ${name} deleted: its namespaces wait for it (Stalled, NoSuchConnection)`);
  }

  /** One probe of the connection's cloud, its status written when it changed, and the next probe set. */
  private probe(c: Connection): Promise<void> {
    const run = (async () => {
      const result = await this.resolveAndProbe(c);
      if (this.connections.get(c.name) !== c) return;
      if (result.authUrl !== undefined) c.authUrl = result.authUrl;
      const changed = c.health.record(result);
      if (c.source) this.up?.set({ connection: c.name, cloud: c.source.cloud }, result.up ? 1 : 0);
      if (changed) this.changed(c);
      await this.writeStatus(c);
    })()
      .catch((err: unknown) => this.opts.log(`cloud   connection ${c.name}: probe failed: ${(err as Error).message}`))
      .finally(() => {
        c.probing = undefined;
        if (this.stopped || this.connections.get(c.name) !== c) return;
        clearTimeout(c.timer);
        c.timer = setTimeout(() => void this.probe(c), c.health.nextProbeInMs());
        c.timer.unref();
      });
    c.probing = run;
    return run;
  }

  private changed(c: Connection): void {
    const state = c.health.state;
    const cloud = c.source ? `cloud "${c.source.cloud}"${c.source.region ? ` region ${c.source.region}` : ''}` : 'its cloud';
    if (state.kind === 'up') {
      this.opts.log(`cloud   connection ${c.name} (${cloud}) is up: reconciling its namespaces`);
      this.opts.onUp(c.name);
    } else if (state.kind === 'down') {
      this.opts.log(`cloud   connection ${c.name} (${cloud}) is down (${state.reason}): ${state.message}; probed again in ${c.health.nextProbeInMs()} ms`);
      this.opts.onDown(c.name, new CloudUnreachableError(c.name, state.reason, state.message));
    }
  }

  /** The connection's source (its Secret, or an OpenStackCloud's), its client for that source, and the probe's verdict. */
  private async resolveAndProbe(c: Connection): Promise<ProbeResult> {
    const installed = await this.installedSecrets(c);
    const source = sourceOf(c.object.spec, (name) => installed.get(name));
    if (typeof source === 'string') return { up: false, reason: 'CloudNotReady', message: source };
    c.source = source;
    const key = JSON.stringify(source);
    if (c.client?.key !== key) {
      // Its own counters: its calls are counted apart from the default cloud's (the run's `calls` line).
      const counted = new ConnectionCounters((service, method, status) =>
        this.calls?.inc({ connection: c.name, cloud: source.cloud, service, method, status: String(status) }),
      );
      const cloud = cloudFromSecret(this.opts.secrets, source.secret, source.cloud, counted, source.region);
      c.client = { key, cloud };
    }
    return probeCloud(c.client.cloud, source);
  }

  /** The clouds.yaml Secret an OpenStackCloud's install wrote, for a connection that names one (read when probed). */
  private async installedSecrets(c: Connection): Promise<Map<string, InstalledCloudsSecret>> {
    const ref = c.object.spec.openStackCloudRef?.name;
    if (ref === undefined) return new Map();
    try {
      const cloud = (await this.custom.getClusterCustomObject({ group, version, plural: 'openstackclouds', name: ref })) as {
        status?: { cloudsSecret?: InstalledCloudsSecret };
      };
      return new Map(cloud.status?.cloudsSecret ? [[ref, cloud.status.cloudsSecret]] : []);
    } catch (err) {
      if (isKubeStatus(err, 404)) return new Map();
      throw err;
    }
  }

  /** Ready or Stalled with the probe's reason on the connection's status (a leader's write; unchanged: none). */
  private async writeStatus(c: Connection): Promise<void> {
    if (!this.opts.acting()) return;
    const state = c.health.state;
    if (state.kind === 'unknown') return;
    const old = (c.object.status?.conditions ?? []) as Condition[];
    const ready = state.kind === 'up';
    const reason = ready ? 'CloudAnswers' : state.reason;
    const message = ready ? `Keystone at ${c.authUrl ?? 'its auth_url'} answers and takes the credentials` : state.message;
    let conditions = setCondition(old, { type: 'Ready', status: ready ? 'True' : 'False', reason, message, observedGeneration: c.generation });
    conditions = setCondition(conditions, { type: 'Stalled', status: ready ? 'False' : 'True', reason, message, observedGeneration: c.generation });
    conditions = setCondition(conditions, {
      type: 'Reconciling',
      status: 'False',
      reason,
      message: ready ? 'probed' : 'probed again with backoff',
      observedGeneration: c.generation,
    });
    const status = {
      observedGeneration: c.generation,
      conditions,
      ...(c.source ? { cloud: c.source.cloud, ...(c.source.region ? { region: c.source.region } : {}) } : {}),
      ...(c.authUrl ? { authUrl: c.authUrl } : {}),
    };
    const text = JSON.stringify(status);
    if (c.written === text) return;
    try {
      await this.custom.patchClusterCustomObjectStatus({ group, version, plural, name: c.name, body: { status } }, mergePatch);
      c.written = text;
    } catch (err) {
      if (!isKubeStatus(err, 404)) this.opts.log(`status  OpenStackCloudConnection ${c.name}: could not write status: ${(err as Error).message}`);
    }
  }
}

/** A connection's call counts, also told to the metrics labelled by connection and cloud. */
class ConnectionCounters extends ClockedCounters {
  readonly #tell: (service: string, method: string, status: number) => void;

  constructor(tell: (service: string, method: string, status: number) => void) {
    super();
    this.#tell = tell;
  }

  override record(service: string, method: string, status: number): void {
    super.record(service, method, status);
    this.#tell(service, method, status);
  }
}
