import { readFileSync } from 'node:fs';

/**
 * The Node flags of the `kupenstack` command, read from its first line
 * (`#!/usr/bin/env -S node …`; deploy/image/kupenstack runs the same): what
 * a test or a benchmark that starts the agent as a process passes, so it
 * measures the agent as shipped (memory above all), not Node's defaults.
 */
export function agentFlags(): string[] {
  const first = readFileSync(new URL('../../agent/cli/main.ts', import.meta.url), 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\/usr\/bin\/env -S node(.*)$/.exec(first);
  if (!m) throw new Error(`agent/cli/main.ts: its first line "${first}" is not the "#!/usr/bin/env -S node <flags>" the agent's flags are read from`);
  return m[1]!.trim().split(/\s+/).filter(Boolean);
}
