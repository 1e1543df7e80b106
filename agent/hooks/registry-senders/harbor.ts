import { record, splitReference, text, type RegistryDelivery, type RegistryPush, type SenderParser } from './push.ts';

/**
 * Harbor's webhook, both payload formats. Default:
 * `{type: "PUSH_ARTIFACT", occur_at: <unix s>, operator, event_data:
 * {resources: [{digest, tag, resource_url: "harbor.example.com/lib/app:tag"}],
 * repository: {name, namespace, repo_full_name, repo_type}}}`.
 * CloudEvents: `{specversion, id, type: "harbor.artifact.pushed", time,
 * data: {resources, repository}}`.
 */

const pushTypes = new Set(['PUSH_ARTIFACT', 'harbor.artifact.pushed']);

export const harbor: SenderParser = {
  sender: 'harbor',
  recognises: (_headers, payload) => typeof payload.type === 'string' && (payload.event_data !== undefined || payload.type.startsWith('harbor.')),
  parse(_headers, payload): RegistryDelivery {
    const type = String(payload.type);
    const data = record(payload.event_data ?? payload.data);
    const repo = record(data.repository);
    const fullName = text(repo.repo_full_name) ?? (text(repo.namespace) && text(repo.name) ? `${String(repo.namespace)}/${String(repo.name)}` : undefined);
    const pushes: RegistryPush[] = [];
    if (pushTypes.has(type)) {
      for (const r of (Array.isArray(data.resources) ? data.resources : []).map(record)) {
        const tag = text(r.tag);
        const where = text(r.resource_url) ? splitReference(String(r.resource_url)) : undefined;
        const repository = fullName ?? where?.repository;
        if (!tag || !repository) continue;
        const digest = text(r.digest);
        pushes.push({ repository, tag, ...(where ? { host: where.host } : {}), ...(digest ? { digest } : {}) });
      }
    }
    const seconds = typeof payload.occur_at === 'number' ? payload.occur_at : undefined;
    const time = text(payload.time) ? Date.parse(String(payload.time)) : Number.NaN;
    const id = text(payload.id);
    return {
      sender: 'harbor',
      ...(id ? { id } : {}),
      ...(seconds !== undefined ? { at: seconds * 1000 } : !Number.isNaN(time) ? { at: time } : {}),
      pushes,
      event: type,
    };
  },
};
