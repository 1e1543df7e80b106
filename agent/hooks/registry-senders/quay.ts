import { splitReference, text, type RegistryDelivery, type SenderParser } from './push.ts';

/**
 * Quay's "Push to Repository" notification (webhook method):
 * `{repository: "ns/repo", namespace, name, docker_url: "quay.io/ns/repo",
 * homepage, updated_tags: ["latest", …]}`. Quay signs nothing and sets no
 * headers, and a secret in the URL is refused (registry-hook.ts): it needs a
 * proxy that adds the Authorization header.
 */
export const quay: SenderParser = {
  sender: 'quay',
  recognises: (_headers, payload) => typeof payload.docker_url === 'string' && Array.isArray(payload.updated_tags),
  parse(_headers, payload): RegistryDelivery {
    const where = splitReference(String(payload.docker_url));
    const repository = text(payload.repository) ?? where?.repository;
    const tags = (payload.updated_tags as unknown[]).filter((t): t is string => typeof t === 'string' && t !== '');
    return {
      sender: 'quay',
      pushes: repository ? tags.map((tag) => ({ repository, tag, ...(where ? { host: where.host } : {}) })) : [],
      event: 'repo_push',
    };
  },
};
