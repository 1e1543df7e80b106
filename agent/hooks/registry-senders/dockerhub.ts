import { record, text, type RegistryDelivery, type SenderParser } from './push.ts';

/**
 * Docker Hub's repository webhook: `{callback_url, push_data: {pushed_at:
 * <unix s>, pusher, tag}, repository: {repo_name: "ns/name", namespace, name,
 * repo_url, …}}`. No signature and no custom headers, and a secret in the
 * URL is refused (registry-hook.ts): it needs a proxy that adds the
 * Authorization header. The callback URL is unique per delivery (the id).
 */
export const dockerhub: SenderParser = {
  sender: 'dockerhub',
  recognises: (_headers, payload) => payload.push_data !== undefined && typeof record(payload.repository).repo_name === 'string',
  parse(_headers, payload): RegistryDelivery {
    const push = record(payload.push_data);
    const repo = record(payload.repository);
    const name = String(repo.repo_name);
    // Official images are named without their namespace on Docker Hub's side.
    const repository = name.includes('/') ? name : `library/${name}`;
    const tag = text(push.tag);
    const id = text(payload.callback_url);
    return {
      sender: 'dockerhub',
      ...(id ? { id } : {}),
      ...(typeof push.pushed_at === 'number' ? { at: push.pushed_at * 1000 } : {}),
      pushes: tag ? [{ host: 'docker.io', repository, tag }] : [],
      event: 'push',
    };
  },
};
