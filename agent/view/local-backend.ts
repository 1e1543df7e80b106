import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SchemaRegistry } from '../schema/registry.ts';
import type { ChangeEvent } from './api.ts';
import { LocalViewReader, type LocalState } from './local-reader.ts';
import type { PersonView, ViewBackend } from './reader.ts';
import { ViewError } from './view-error.ts';

/**
 * `GET /api/events` over the agent's own state: the state is read once a
 * second (the agent's memory and files, never OpenStack) and a change of a
 * Sync's status or of an object's is one `change` event.
 */
function localEvents(state: LocalState): PersonView['events'] {
  return async (req: IncomingMessage, res: ServerResponse, scopes: string[]): Promise<void> => {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive' });
    res.write('event: ready\ndata: {}\n\n');
    const seen = new Map<string, string>();
    const look = async (send: boolean): Promise<void> => {
      for (const s of await state()) {
        const items: [string, string, unknown][] = [
          [`Sync/${s.name}`, s.name, s.status],
          ...Object.entries(s.resources).map(([a, r]): [string, string, unknown] => [a, a, r]),
        ];
        for (const [key, name, value] of items) {
          const print = JSON.stringify(value);
          if (send && seen.get(key) !== print) {
            const parts = name.split('/');
            const e: ChangeEvent = key.startsWith('Sync/')
              ? { scope: scopes.join(','), type: 'MODIFIED', kind: 'Sync', name }
              : {
                  scope: scopes.join(','),
                  type: seen.has(key) ? 'MODIFIED' : 'ADDED',
                  kind: parts[1] ?? '',
                  namespace: parts[0]!,
                  name: parts.slice(2).join('/'),
                };
            res.write(`event: change\ndata: ${JSON.stringify(e)}\n\n`);
          }
          seen.set(key, print);
        }
      }
    };
    await look(false);
    const timer = setInterval(() => void look(true).catch(() => undefined), 1000);
    req.on('close', () => clearInterval(timer));
  };
}

const sha = (s: string): Buffer => createHash('sha256').update(s).digest();

/**
 * The standalone agent's view (`kupenstack agent --view-address`): with
 * `tokenFile`, a person signs in with the token that file holds (read at
 * each sign-in, so a rotated file needs no restart; compared in constant
 * time); without it the view needs no sign-in and the flags allow it on a
 * loopback address only (cli/view-options.ts).
 */
export function localBackend(state: LocalState, registry: SchemaRegistry, tokenFile?: string): ViewBackend {
  const view: PersonView = { reader: new LocalViewReader(state, registry), events: localEvents(state) };
  const operator = { username: 'operator', groups: [] };
  return {
    server: 'agent',
    signIn: async (token) => {
      if (!tokenFile) throw new ViewError(401, 'this agent serves its view on loopback without sign-in');
      let want: string;
      try {
        want = (await readFile(tokenFile, 'utf8')).trim();
      } catch (cause) {
        throw new ViewError(500, `the view's token file ${tokenFile} cannot be read`, { cause, code: 'internal' });
      }
      if (want === '' || !timingSafeEqual(sha(want), sha(token))) throw new ViewError(401, 'not the token this agent was given (--view-token-file)');
      return { who: operator, view };
    },
    ...(tokenFile ? {} : { anonymous: { who: { username: 'loopback', groups: [] }, view } }),
  };
}
