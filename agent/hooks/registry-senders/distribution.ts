import { header, record, text, type RegistryDelivery, type RegistryPush, type SenderParser } from './push.ts';

/**
 * CNCF distribution (registry 2.x/3.x, and what builds on it: GitLab,
 * zot's compatible mode): the notification envelope
 * `application/vnd.docker.distribution.events.v1+json`,
 * `{"events": [{id, timestamp, action, target: {mediaType, digest,
 * repository, url, tag}, request: {host, …}, …}]}`. A manifest pushed under
 * a tag carries `target.tag`; blob uploads and pushes by digest do not.
 */

export const envelopeType = 'application/vnd.docker.distribution.events.v1+json';

export const distribution: SenderParser = {
  sender: 'distribution',
  recognises: (headers, payload) => (header(headers, 'content-type') ?? '').startsWith(envelopeType) || Array.isArray(payload.events),
  parse(_headers, payload): RegistryDelivery {
    const events = Array.isArray(payload.events) ? payload.events.map(record) : [];
    const pushes: RegistryPush[] = [];
    const times: number[] = [];
    for (const e of events) {
      const t = Date.parse(text(e.timestamp) ?? '');
      if (!Number.isNaN(t)) times.push(t);
      const target = record(e.target);
      const repository = text(target.repository);
      const tag = text(target.tag);
      if (e.action !== 'push' || !repository || !tag) continue;
      const host = text(record(e.request).host) ?? hostOf(text(target.url));
      const digest = text(target.digest);
      pushes.push({ repository, tag, ...(host ? { host } : {}), ...(digest ? { digest } : {}) });
    }
    const ids = events.map((e) => text(e.id)).filter((id): id is string => id !== undefined);
    return {
      sender: 'distribution',
      ...(ids.length > 0 ? { id: ids.join(',') } : {}),
      ...(times.length > 0 ? { at: Math.min(...times) } : {}),
      pushes,
      event: [...new Set(events.map((e) => text(e.action) ?? ''))].join(',') || 'empty',
    };
  },
};

function hostOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}
