import { join } from 'node:path';
import { FileStateStore } from '../status/file-store.ts';
import type { LocalState, LocalSync } from '../view/local-reader.ts';
import type { Agent } from './agent.ts';

/**
 * What the web view reads of `kupenstack agent` (agent/view/local-reader.ts):
 * each Sync's status as the runner holds it and its resources as its state
 * file has them (`<stateDir>/syncs/<name>/<owner>.json`), read again at each
 * call. Read only: the file is loaded by a store of its own that never writes.
 */
export function agentViewState(agent: Agent, stateDir: string): LocalState {
  return () =>
    Promise.all(
      [...agent.handles.values()].map(async (h): Promise<LocalSync> => {
        const st = h.runner.status;
        const stored = await new FileStateStore(join(stateDir, 'syncs', h.sync.name), h.sync.owner).load();
        return {
          name: h.sync.name,
          source: st.source,
          suspended: st.suspended,
          status: {
            conditions: st.conditions,
            ...(st.lastFetchedRevision ? { lastFetchedRevision: st.lastFetchedRevision } : {}),
            ...(st.lastAppliedRevision ? { lastAppliedRevision: st.lastAppliedRevision } : {}),
            ...(st.rejectedRevision ? { rejectedRevision: st.rejectedRevision } : {}),
            ...(st.rejectedBecause ? { rejectedBecause: st.rejectedBecause } : {}),
            ...(st.lastSyncTime ? { lastSyncTime: st.lastSyncTime } : {}),
            history: st.history.map((r) => ({
              revision: r.revision,
              startedAt: r.startedAt,
              duration: r.duration,
              result: r.result,
              ...(r.message ? { message: r.message } : {}),
              ...(r.counts ? { counts: r.counts } : {}),
            })),
          },
          resources: stored.resources,
        };
      }),
    );
}
