// `npm run bench`: every benchmark once, printed as one table beside its peer or goal.
import { renderTable, type BenchRow } from './table.ts';
import { benchValidate } from './validate.ts';

const rows: BenchRow[] = [];
for (const bench of [benchValidate]) rows.push(...(await bench()));
console.log(renderTable(rows));
