import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Identity } from './user-client.ts';
import type { CloudView, HeldPlan, ImagesView, NamespaceView, ObjectDetail, Overview, SyncTree } from './api.ts';

/**
 * What the view's API reads, one method per route (api.ts). The in-cluster
 * reader (kube-reader.ts) reads through the API server with the signed-in
 * person's token; each method throws a ViewError (403, 404) the server
 * answers as it is.
 */
export interface ViewReader {
  overview(): Promise<Overview>;
  /** A cluster Sync, or with `namespace` a tenant's NamespaceSync. */
  sync(name: string, namespace?: string): Promise<SyncTree>;
  plan(name: string, namespace?: string): Promise<HeldPlan>;
  namespace(namespace: string): Promise<NamespaceView>;
  object(namespace: string, kind: string, name: string): Promise<ObjectDetail>;
  images(namespace?: string): Promise<ImagesView>;
  clouds(): Promise<CloudView[]>;
  cloud(name: string): Promise<CloudView>;
}

/**
 * The commit behind an applied revision (message, author, when), from the
 * front end's local Git cache; asked only after the person read the Sync.
 */
export type CommitLookup = (gitUrl: string, commit: string) => Promise<{ message: string; author: string; when: string } | undefined>;

/** What one person sees: the reads and the live stream, both made as them. */
export interface PersonView {
  reader: ViewReader;
  /** Serves `GET /api/events` (text/event-stream) for these scopes until the browser goes. */
  events(req: IncomingMessage, res: ServerResponse, scopes: string[]): Promise<void>;
}

/** Where the view's data comes from: the cluster (kube-backend.ts) or the standalone agent's state. */
export interface ViewBackend {
  server: 'controller' | 'agent';
  /** A bearer token → who it is and their view; a ViewError 401 when the token is refused. */
  signIn(token: string): Promise<{ who: Identity; view: PersonView }>;
  /** The view without sign-in (the standalone agent on loopback only); undefined: everyone signs in. */
  anonymous?: { who: Identity; view: PersonView };
}
