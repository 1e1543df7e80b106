import type { Decision } from '../plan/decide.ts';
import type { ValidatedRevision } from '../validate/validate.ts';
import type { ProjectContext } from './context.ts';
import type { Observation } from './observe.ts';
import type { Progress } from './progress.ts';
import type { Node, Run } from './run.ts';

/** What the phases of one execution (replace, converge, prune) share. */
export interface Execution {
  rev: ValidatedRevision;
  decision: Decision;
  seen: Observation;
  run: Run;
  /** The plan's objects by address, as they are now (their remote changes as phases act). */
  nodes: Map<string, Node>;
  /** Namespace → its project's context (new projects included). */
  scopes: Map<string, ProjectContext>;
  /** The revision's dependency order, restricted to the nodes. */
  order: string[];
  /** Records a failure on its object (status, counts, an event); the run goes on. */
  fail: (address: string, err: unknown) => void;
  /** Requeue mode: what OpenStack is still working on (a replaced object still being deleted, a server building); its dependents wait for a later run. */
  progressing: Map<string, Progress>;
}
