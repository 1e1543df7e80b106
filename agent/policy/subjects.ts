import type { SourceDocument } from '../model/manifest.ts';
import type { PolicySubject } from './member-policy.ts';

/** The documents of a namespace (controller/resources/revision.ts: file = address) as the member policy sees them. */
export function subjectsOf(documents: readonly SourceDocument[]): PolicySubject[] {
  return documents.map((d) => {
    const value = (d.value ?? {}) as { kind?: unknown; metadata?: { name?: unknown }; spec?: unknown };
    return {
      address: d.file,
      kind: typeof value.kind === 'string' ? value.kind : '',
      name: typeof value.metadata?.name === 'string' ? value.metadata.name : '',
      spec: value.spec && typeof value.spec === 'object' ? (value.spec as Record<string, unknown>) : {},
    };
  });
}
