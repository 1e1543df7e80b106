// `npm run bench`: every benchmark once, printed as one table beside its peer or goal.
import { renderTable, type BenchRow } from './table.ts';
import { benchApply } from './apply.ts';
import { benchValidate } from './validate.ts';
import { benchOci } from './oci.ts';
import { benchOciImport } from './oci-import.ts';

import { spawnSync } from 'node:child_process';

// The apply benchmark needs the test bed's cloud (started, or reused).
if (spawnSync('bash', ['test/testbed/up.sh'], { stdio: ['ignore', 'ignore', 'inherit'] }).status !== 0) throw new Error('the test bed did not start');
const only = process.env.BENCH_ONLY?.split(',');
// `oci`: the registry side (oci.ts), then the import into Glance beside the curl pipe (oci-import.ts).
const benches = { validate: benchValidate, apply: benchApply, oci: async (): Promise<BenchRow[]> => [...(await benchOci()), ...(await benchOciImport())] };
const rows: BenchRow[] = [];
for (const [name, bench] of Object.entries(benches)) if (!only || only.includes(name)) rows.push(...(await bench()));
console.log(renderTable(rows));
