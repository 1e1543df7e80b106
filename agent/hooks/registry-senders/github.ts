import { header, record, splitReference, text, type RegistryDelivery, type SenderParser } from './push.ts';

/**
 * GitHub's `package` event (and the older `registry_package`), signed with
 * X-Hub-Signature-256: `{action: "published"|"updated", package: {name,
 * namespace, package_type: "CONTAINER", package_version: {version:
 * "sha256:…", package_url: "ghcr.io/owner/name:tag", container_metadata:
 * {tag: {name, digest}}}, registry: {host, url}}}`.
 */
export const github: SenderParser = {
  sender: 'github',
  recognises: (headers) => ['package', 'registry_package'].includes(header(headers, 'x-github-event') ?? ''),
  parse(headers, payload): RegistryDelivery {
    const event = header(headers, 'x-github-event') ?? '';
    const id = header(headers, 'x-github-delivery');
    const pkg = record(payload.package ?? payload.registry_package);
    const type = (text(pkg.package_type) ?? text(pkg.ecosystem) ?? '').toLowerCase();
    const version = record(pkg.package_version);
    const tagInfo = record(record(version.container_metadata).tag);
    const tag = text(tagInfo.name);
    const where = text(version.package_url) ? splitReference(String(version.package_url)) : undefined;
    const owner = text(pkg.namespace) ?? text(record(pkg.owner).login);
    const repository = where?.repository ?? (owner && text(pkg.name) ? `${owner}/${String(pkg.name)}`.toLowerCase() : undefined);
    const host = where?.host ?? text(record(pkg.registry).host) ?? 'ghcr.io';
    const digest = text(tagInfo.digest) ?? (text(version.version)?.startsWith('sha256:') ? text(version.version) : undefined);
    const action = text(payload.action) ?? '';
    const isPush = (type === 'container' || type === 'docker') && (action === 'published' || action === 'updated');
    return {
      sender: 'github',
      ...(id ? { id } : {}),
      pushes: isPush && tag !== undefined && repository !== undefined ? [{ host, repository, tag, ...(digest ? { digest } : {}) }] : [],
      event: `${event}.${action}`,
    };
  },
};
