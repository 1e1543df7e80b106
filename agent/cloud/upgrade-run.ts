import type { Progress } from '../../lib/progress.ts';
import type { OpenStackCloudSpec, OpenStackCloudStatus } from '../model/kinds.generated.ts';
import { setCondition } from '../status/conditions.ts';
import { applySteps, failureText, type CloudApplyOptions, type CloudApplyResult, type StepEntry, type StepFailure } from './apply.ts';
import type { Step } from './phases.ts';
import type { RenderedChart } from './render-cloud.ts';
import type { CloudStatusHome } from './status-home.ts';
import { backupJob, upgradeOrder, upgradeSteps } from './upgrade.ts';
import { describeWindow, windowAt } from './window.ts';

type UpgradeStatus = NonNullable<OpenStackCloudStatus['upgrade']>;
type ApplyFn = (steps: readonly Step[], opts: CloudApplyOptions) => Promise<CloudApplyResult>;

/** What the upgrade is given: the run's options as driveCloud has them, and the steps' options. */
export interface UpgradeOptions {
  cloud: string;
  namespace: string;
  /** Pause before this chart (the manifest's kupenstack.io/pause-upgrade-at annotation). */
  pauseAt?: string;
  now?: () => Date;
  log?: (line: string) => void;
  steps: CloudApplyOptions;
}

/** How an upgrade pass ended before every chart ran the new release: stopped (failure, pause, window) or, in requeue mode, waiting at a gate. */
export interface UpgradeStop {
  status: OpenStackCloudStatus;
  failure?: StepFailure;
  /** Outside the maintenance window: when the next one opens. */
  waitUntil?: Date;
  waiting?: Progress;
}

/**
 * One pass of an upgrade from status.release to spec.release: the backup, then one chart at a
 * time, its progress saved to the status home before each step, so a killed agent resumes at the
 * chart it was at and does not back up again once status says the backup is done. `run` answers
 * how it stopped, or undefined once every chart runs the new release; `status` and `stepLog` are
 * then where it left them. `apply` is applySteps (a unit test records the order of the steps instead).
 */
export class CloudUpgrade {
  private readonly spec: OpenStackCloudSpec;
  private readonly rendered: RenderedChart[];
  private readonly home: Pick<CloudStatusHome, 'save'>;
  private readonly opts: UpgradeOptions;
  private readonly apply: ApplyFn;
  private readonly from: string;
  private readonly to: string;
  private readonly order: string[];
  /** The steps this pass started and the gates it passed, in order. */
  readonly stepLog: StepEntry[] = [];
  private up: UpgradeStatus;
  /** The status as last saved. */
  status: OpenStackCloudStatus;

  constructor(
    spec: OpenStackCloudSpec,
    rendered: RenderedChart[],
    stored: OpenStackCloudStatus,
    home: Pick<CloudStatusHome, 'save'>,
    opts: UpgradeOptions,
    apply: ApplyFn = applySteps,
  ) {
    this.spec = spec;
    this.rendered = rendered;
    this.home = home;
    this.opts = opts;
    this.apply = apply;
    this.from = stored.release!;
    this.to = spec.release;
    const running = stored.upgrade;
    const resumes = running && running.to === this.to && running.from === this.from && running.phase !== 'Succeeded';
    this.up = resumes ? { ...running } : { from: this.from, to: this.to, phase: 'Backup', startedAt: new Date().toISOString() };
    this.status = { ...stored, upgrade: this.up };
    this.order = upgradeOrder(rendered);
  }

  private log(line: string): void {
    this.opts.log?.(`cloud ${this.opts.cloud}: ${line}`);
  }

  async run(): Promise<UpgradeStop | undefined> {
    const stopped = (this.up.backup ? undefined : await this.backup()) ?? (await this.charts());
    if (stopped) return stopped;
    this.up = { ...this.up, phase: 'Succeeded', step: undefined, service: undefined };
    await this.save();
    return undefined;
  }

  /** The backup Job, made from the mariadb chart's backup CronJob, run to completion before any chart is touched. */
  private async backup(): Promise<UpgradeStop | undefined> {
    const wait = await this.outside();
    if (wait) return wait;
    this.up = { ...this.up, phase: 'Backup', step: 'backup' };
    await this.save();
    const job = backupJob(this.rendered, this.to);
    if (!job) {
      const reason =
        "the mariadb chart renders no backup CronJob; an upgrade needs a backup first: enable the mariadb chart's backup (manifests.cron_job_mariadb_backup)";
      return this.stop({ step: 'backup', kind: 'CronJob', name: 'mariadb-backup', reason }, 'BackupFailed');
    }
    this.log(`upgrade ${this.from} → ${this.to}: backup Job ${job.name} first`);
    const result = await this.runSteps([{ kind: 'hooks', group: 0, charts: ['mariadb'], weight: 0, when: 'pre', objects: [job] }]);
    if (result.waiting) return { status: this.status, waiting: result.waiting };
    const at = { time: new Date().toISOString(), location: `Job ${this.opts.namespace}/${job.name}` };
    if (result.failure) {
      this.up = { ...this.up, phase: 'Failed' };
      await this.save({ lastBackup: { ...at, result: 'Failed' } });
      return this.stop({ ...result.failure, step: 'backup' }, 'BackupFailed');
    }
    this.up = { ...this.up, backup: at.location };
    await this.save({ lastBackup: { ...at, result: 'Succeeded' } });
    return undefined;
  }

  /** One chart at a time, from the one progress points at: paused before a chart, waiting outside the window, stopped on a failure. */
  private async charts(): Promise<UpgradeStop | undefined> {
    const start = Math.max(0, this.order.indexOf(this.up.service ?? this.order[0]!));
    for (let i = start; i < this.order.length; i++) {
      const chart = this.order[i]!;
      if (this.opts.pauseAt === chart) return this.pause(chart);
      const wait = await this.outside(chart);
      if (wait) return wait;
      this.up = { ...this.up, phase: 'Upgrading', service: chart, step: chart };
      await this.save();
      this.log(`upgrade ${this.from} → ${this.to}: ${chart} (${i + 1} of ${this.order.length})`);
      const rendered = this.rendered.find((c) => c.chart === chart)!;
      const result = await this.runSteps(upgradeSteps(rendered, i));
      if (result.waiting) return { status: this.status, waiting: result.waiting };
      if (result.failure) {
        this.up = { ...this.up, phase: 'Failed', step: `${chart}/${result.failure.kind}/${result.failure.name}` };
        return this.stop(result.failure, 'UpgradeFailed');
      }
      this.status = { ...this.status, services: { ...this.status.services, [chart]: { ready: true, release: this.to, chartVersion: rendered.version } } };
    }
    return undefined;
  }

  private async runSteps(steps: Step[]): Promise<CloudApplyResult> {
    const result = await this.apply(steps, this.opts.steps);
    this.stepLog.push(...(result.stepLog ?? []));
    return result;
  }

  private async pause(chart: string): Promise<UpgradeStop> {
    this.up = { ...this.up, service: chart, step: `${chart} (paused)` };
    const message = `upgrade ${this.from} → ${this.to} paused before ${chart} (annotation kupenstack.io/pause-upgrade-at); remove it to go on`;
    await this.save({ conditions: setCondition(this.status.conditions ?? [], { type: 'Ready', status: 'False', reason: 'UpgradePaused', message }) });
    this.log(`upgrade paused before ${chart}`);
    return { status: this.status };
  }

  /**
   * No new step starts outside the window; the step already running finished before this is asked again.
   * `next` is the chart that would start: progress points at it, so the next window resumes there (not at the finished one).
   */
  private async outside(next?: string): Promise<UpgradeStop | undefined> {
    const w = windowAt(this.spec.maintenanceWindow, (this.opts.now ?? (() => new Date()))());
    if (w.open) return undefined;
    if (next) this.up = { ...this.up, service: next, step: next };
    const message = `upgrade ${this.from} → ${this.to} waits before ${this.up.step ?? 'its first step'}: ${describeWindow(w)}`;
    await this.save({
      conditions: setCondition(this.status.conditions ?? [], { type: 'Ready', status: 'False', reason: 'OutsideMaintenanceWindow', message }),
    });
    this.log(`upgrade waits: ${describeWindow(w)}`);
    return { status: this.status, waitUntil: w.opensAt };
  }

  /** Stopped on a failure: the charts before it run the new release, it and those after it the old one. */
  private async stop(failure: StepFailure, reason: string): Promise<UpgradeStop> {
    const services = { ...this.status.services };
    const at = this.order.indexOf(this.up.service ?? '');
    this.order.forEach((chart, i) => {
      const version = this.rendered.find((c) => c.chart === chart)?.version;
      if (i < at) services[chart] = { ready: true, release: this.to, chartVersion: version };
      else if (i === at) services[chart] = { ready: false, release: this.from, message: failureText(failure) };
      else services[chart] = { ...services[chart], release: this.from };
    });
    const where = this.up.step ?? this.up.phase;
    const message = `upgrade ${this.from} → ${this.to} stopped at ${where}: ${failureText(failure)}`;
    const readyFalse = setCondition(this.status.conditions ?? [], { type: 'Ready', status: 'False', reason, message });
    const conditions = setCondition(readyFalse, { type: 'Stalled', status: 'True', reason, message: failureText(failure) });
    await this.save({ services, conditions });
    this.log(`upgrade ${this.from} → ${this.to} stopped at ${where}: ${failureText(failure)}`);
    return { status: this.status, failure };
  }

  private async save(extra: Partial<OpenStackCloudStatus> = {}): Promise<void> {
    this.status = { ...this.status, ...extra, upgrade: this.up };
    await this.home.save({ status: this.status });
  }
}
