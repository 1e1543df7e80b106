import type { KindAdapter } from '../kinds/kit/adapter.ts';
import type { Change, FieldDiff } from './plan.ts';

/** One planned change, with what the kind says is destructive about it. */
export function changeOf(address: string, adapter: KindAdapter, action: Change['action'], fields: FieldDiff[], id?: string): Change {
  const [namespace = '', kind = '', name = ''] = address.split('/');
  const change: Change = { address, kind, namespace, name, action, fields, destructive: false, reasons: [], ...(id ? { id } : {}) };
  if (action === 'delete' || action === 'replace') {
    const reason = adapter.impact?.onDelete ?? (action === 'delete' ? { code: 'object-deleted' as const, message: `the ${kind} is deleted` } : undefined);
    if (reason) change.reasons.push(reason);
  }
  const notes: string[] = [];
  // A field's impact (resize, rebuild, lost address…) is what changing it does to an existing object: a create has none.
  for (const f of action === 'create' ? [] : fields) {
    const impact = adapter.impact?.fields?.[f.path];
    if (!impact) continue;
    notes.push(impact.note);
    if (impact.code) change.reasons.push({ code: impact.code, message: impact.note });
  }
  if (notes.length) change.note = notes.join('; ');
  change.destructive = change.reasons.length > 0;
  return change;
}
