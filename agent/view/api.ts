/**
 * The web view's API contract (issue 52): the JSON the view server answers
 * under `/api/` and the browser half renders. A plain types file with no
 * imports, so the UI bundle imports it as it is; it only grows (new optional
 * fields, new routes), nothing in it changes meaning.
 *
 * Every read behind these routes is made with the signed-in person's own
 * token (a Kubernetes client per session), so what a page shows is what
 * Kubernetes RBAC lets that person read: a namespace they may not read
 * answers 403 with an {@link ApiError}, which the UI renders as a 403 page.
 *
 * Routes (all JSON; GET never changes anything; POSTs need the header
 * `X-Kupenstack-View: 1` and, when the browser sends an Origin, the same origin):
 *
 * | method | path                                          | answer                                  |
 * |--------|-----------------------------------------------|-----------------------------------------|
 * | POST   | /api/login            body {@link LoginRequest} | {@link WhoAmI}, sets the session cookie  |
 * | POST   | /api/logout                                   | 204, clears the session                  |
 * | GET    | /api/whoami                                   | {@link WhoAmI} (401 before sign-in)      |
 * | GET    | /api/overview                                 | {@link Overview}                         |
 * | GET    | /api/syncs/:name                              | {@link SyncTree}                         |
 * | GET    | /api/syncs/:name/plan                         | {@link HeldPlan} (404 when nothing held) |
 * | GET    | /api/namespaces/:namespace/syncs/:name        | {@link SyncTree} of a tenant's NamespaceSync |
 * | GET    | /api/namespaces/:namespace/syncs/:name/plan   | {@link HeldPlan} of a NamespaceSync      |
 * | GET    | /api/namespaces/:namespace                    | {@link NamespaceView}                    |
 * | GET    | /api/namespaces/:namespace/:kind/:name        | {@link ObjectDetail} (kind as `Network`) |
 * | GET    | /api/images                                   | {@link ImagesView} (every readable namespace; `?namespace=` narrows) |
 * | GET    | /api/clouds                                   | {@link CloudView}[]                      |
 * | GET    | /api/clouds/:name                             | {@link CloudView}                        |
 * | GET    | /api/events?scope=…                           | text/event-stream of {@link ChangeEvent} |
 *
 * `scope` of /api/events is one or more (comma-separated) of `overview`,
 * `sync:<name>`, `nssync:<ns>/<name>` (a NamespaceSync), `namespace:<ns>`, `images`, `cloud:<name>`: the server
 * watches (with the person's token) what that page shows and sends one
 * `change` event per change; the page then reads its route again. A scope
 * the person may not watch ends the stream with one `denied` event.
 *
 * Any other path that is not under /api/ answers the UI's index.html, so
 * every page has a shareable URL. Errors: 400, 401 (not signed in or the
 * session expired), 403, 404, 500, each with an {@link ApiError} body.
 */

/** Header every POST must carry (a cross-site form cannot set it). */
export const csrfHeader = 'x-kupenstack-view';

/** Name of the session cookie (HttpOnly, SameSite=Strict, Secure when served over TLS). */
export const sessionCookie = 'kupenstack_view';

/** The UI's route names, to build links; the server's table is {@link routes}. */
export const routes = {
  login: '/api/login',
  logout: '/api/logout',
  whoami: '/api/whoami',
  overview: '/api/overview',
  /** A cluster Sync, or with `namespace` a tenant's NamespaceSync. */
  sync: (name: string, namespace?: string) =>
    namespace ? `/api/namespaces/${encodeURIComponent(namespace)}/syncs/${encodeURIComponent(name)}` : `/api/syncs/${encodeURIComponent(name)}`,
  syncPlan: (name: string, namespace?: string) =>
    namespace ? `/api/namespaces/${encodeURIComponent(namespace)}/syncs/${encodeURIComponent(name)}/plan` : `/api/syncs/${encodeURIComponent(name)}/plan`,
  namespace: (namespace: string) => `/api/namespaces/${encodeURIComponent(namespace)}`,
  object: (namespace: string, kind: string, name: string) =>
    `/api/namespaces/${encodeURIComponent(namespace)}/${encodeURIComponent(kind)}/${encodeURIComponent(name)}`,
  images: (namespace?: string) => `/api/images${namespace ? `?namespace=${encodeURIComponent(namespace)}` : ''}`,
  clouds: '/api/clouds',
  cloud: (name: string) => `/api/clouds/${encodeURIComponent(name)}`,
  events: (scopes: string[]) => `/api/events?scope=${encodeURIComponent(scopes.join(','))}`,
} as const;

export interface ApiError {
  /** 400 | 401 | 403 | 404 | 500 … (the HTTP status, repeated for the UI). */
  status: number;
  /** Stable code: `unauthenticated`, `forbidden`, `not-found`, `bad-request`, `csrf`, `internal`. */
  code: string;
  /** One sentence for a person (never a token). */
  message: string;
}

export interface LoginRequest {
  /** A bearer token the API server trusts: a ServiceAccount token (`kubectl create token`) or an OIDC ID token. */
  token: string;
}

export interface WhoAmI {
  /** As the API server names the person (TokenReview / SelfSubjectReview). */
  username: string;
  groups: string[];
  /** `token`: signed in with a bearer token; `loopback`: the standalone agent's view without sign-in. */
  mode: 'token' | 'loopback';
  /** `controller` (reads through the API server) or `agent` (the standalone agent's local state). */
  server: 'controller' | 'agent';
}

/** One condition as status holds it (kstatus: Ready, Reconciling, Stalled …). */
export interface Condition {
  type: string;
  /** 'True', 'False' or 'Unknown'. */
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** Ready / Reconciling / Stalled / Suspended / Unknown: the one word a row shows, from the conditions. */
export type Health = 'Ready' | 'Reconciling' | 'Stalled' | 'Failed' | 'Suspended' | 'Missing' | 'Unknown';

/** A revision as a Sync names it (`main@sha1:<sha>`), with the commit when the server knows it. */
export interface Revision {
  /** As status holds it, e.g. `main@sha1:0a1b…`. */
  revision: string;
  /** The commit (or OCI digest) part alone. */
  commit?: string;
  message?: string;
  author?: string;
  /** ISO time of the commit, or of the run that applied it when the commit's is unknown. */
  when?: string;
}

/** One line of a rejected revision's diagnostics, split where it has the `file:line:column: message` form. */
export interface Diagnostic {
  file?: string;
  line?: number;
  column?: number;
  message: string;
  /** The line as status holds it. */
  text: string;
}

export interface SyncSummary {
  name: string;
  /** A tenant's NamespaceSync: its namespace (a cluster Sync has none). */
  namespace?: string;
  /** Git URL (and ref) or OCI reference the Sync follows. */
  source: string;
  /** Folder inside the source, when set. */
  path?: string;
  suspended: boolean;
  health: Health;
  /** The Ready condition's reason and message. */
  reason?: string;
  message?: string;
  applied?: Revision;
  /** Newest revision fetched (differs from applied while one is held, rejected or in flight). */
  fetched?: string;
  /** Revision held by the mass-delete guard, waiting for confirmation: see /api/syncs/:name/plan. */
  held?: string;
  /** Newest revision, rejected by validation (nothing of it applied); `diagnostics` says why. */
  rejected?: string;
  diagnostics: Diagnostic[];
  /** With `wait`: objects Ready, Reconciling and Stalled, and the first that are not Ready. */
  wait?: { ready: number; reconciling: number; stalled: number; failing: string[] };
  lastSyncTime?: string;
  /** Objects in the inventory. */
  objects: number;
}

export interface NamespaceSummary {
  name: string;
  /** Objects per kind. */
  counts: Record<string, number>;
  ready: number;
  notReady: number;
  stalled: number;
}

export interface CloudSummary {
  name: string;
  health: Health;
  release?: string;
  /** The upgrade in flight (phase not Succeeded/Failed), when one runs. */
  upgrading?: string;
}

export interface Overview {
  syncs: SyncSummary[];
  namespaces: NamespaceSummary[];
  clouds: CloudSummary[];
  /**
   * What the person may not list, so the page can say so rather than show an
   * empty table: e.g. `syncs` (cluster-scoped: tenants cannot read them), `clouds`.
   */
  forbidden: string[];
}

/** An object's reference to another (subnet → network, VM → image/port/volume), resolvable to a link. */
export interface ObjectRef {
  kind: string;
  namespace?: string;
  name: string;
  /** The spec field it comes from, e.g. `networkRef` or `ports[0].portRef`. */
  field?: string;
}

/** A Kubernetes Event about an object (the controller records them: Created, Recreated, DriftCorrected …). */
export interface ObjectEvent {
  /** 'Normal' or 'Warning'. */
  type: string;
  reason: string;
  message: string;
  count: number;
  /** ISO time it was last seen. */
  at: string;
  /** Kind/name of the object it is about (on namespace and Sync pages). */
  object?: string;
}

/** One KupenStack object as a row (namespace page, Sync tree). */
export interface ObjectSummary {
  kind: string;
  namespace?: string;
  name: string;
  /** The OpenStack id it is reconciled to (status.id); absent before its first create. */
  openstackId?: string;
  health: Health;
  reason?: string;
  message?: string;
  /** Drift the controller saw and did not (yet) correct: from the conditions (e.g. a paused namespace) and Events. */
  drift?: string;
  lastSyncTime?: string;
  /** References to other objects, for links. */
  refs: ObjectRef[];
  /** Its newest Event, when the server has it at hand (the Sync tree's "last Event" column; added by the UI half). */
  lastEvent?: ObjectEvent;
}

export interface ObjectDetail extends ObjectSummary {
  conditions: Condition[];
  /** status as the object holds it (free-form: the kind's own fields). */
  status: Record<string, unknown>;
  /** spec as applied (Secrets are only referenced in specs, never inlined). */
  spec: Record<string, unknown>;
  /** The Sync that applied it (its field manager / label), when known. */
  sync?: string;
  /** Objects that reference this one. */
  referencedBy: ObjectRef[];
  /** Newest first, at most 50. */
  events: ObjectEvent[];
}

export interface SyncTree {
  sync: SyncSummary;
  /** revision → namespaces → objects. */
  revision?: Revision;
  /** `events`: the namespace's last Events about KupenStack objects (newest first, at most 20; none where the person may not read Events). */
  namespaces: { name: string; objects: ObjectSummary[]; forbidden?: boolean; events?: ObjectEvent[] }[];
  /** Cluster-scoped objects of the inventory (OpenStackCloud). */
  cluster: ObjectSummary[];
  /** Recent runs, newest first. */
  history: { revision: string; startedAt: string; duration?: string; result: string; message?: string; counts?: Record<string, number> }[];
  /** The Sync's own Events, newest first. */
  events: ObjectEvent[];
}

/** What a held or rejected revision would do, the data `kupenstack plan` prints. */
export interface HeldPlan {
  sync: string;
  revision: string;
  /** Why it waits: the mass-delete guard, or validation refused it. */
  why: 'mass-delete' | 'rejected';
  message: string;
  /** Objects the revision would delete (held deletions), as far as the server knows them. */
  deletions: ObjectRef[];
  /** Counts of the run that held it (created, updated, deleted, held …). */
  counts?: Record<string, number>;
  diagnostics: Diagnostic[];
  /** How to go on, as the controller words it (e.g. the kubectl annotate line). */
  confirm?: string;
}

export interface NamespaceView {
  name: string;
  /** Objects by kind (kind → rows sorted by name). */
  kinds: Record<string, ObjectSummary[]>;
  /** The namespace's ProjectQuota(s): spec limits and what status reports in use. */
  quotas: { name: string; limits: Record<string, unknown>; usage?: Record<string, unknown>; health: Health }[];
  /** Objects held or Stalled, with why (first conditions' message). */
  held: { kind: string; name: string; reason: string; message: string }[];
  /** Whether the controller paused the namespace (plan only) and why. */
  paused?: string;
  /** Newest Events first, at most 100. */
  events: ObjectEvent[];
}

export interface ImageVersion {
  digest?: string;
  tag?: string;
  /** Glance image id. */
  glanceId?: string;
  createdAt?: string;
  /** The version status.id points at. */
  active: boolean;
  inUse: boolean;
}

export interface ImageRow {
  namespace: string;
  name: string;
  /** `oci://repo:tag` or the URL the Image follows. */
  source: string;
  /** Followed repository and tag (OCI), or semver range. */
  repository?: string;
  tag?: string;
  resolvedTag?: string;
  health: Health;
  /** The active Glance image id. */
  openstackId?: string;
  /** Newest first. */
  versions: ImageVersion[];
  /** VirtualMachines that use this Image. */
  usedBy: ObjectRef[];
  /** Signature result as the conditions/Events report it (e.g. `verified by key …`, `not required`). */
  signature?: string;
  transfer?: { digest?: string; bytesDone?: number; bytesTotal?: number; startedAt?: string };
}

export interface ImagesView {
  images: ImageRow[];
  forbidden: string[];
}

export interface CloudService {
  name: string;
  ready: boolean;
  release?: string;
  chartVersion?: string;
  message?: string;
  endpoint?: string;
}

export interface UpgradeStep {
  /** backup, chart (per service), Job, gate … */
  step: string;
  state: 'Done' | 'Running' | 'Failed' | 'Waiting';
  /** ISO times, when known (from status and Events). */
  startedAt?: string;
  finishedAt?: string;
  message?: string;
}

export interface CloudView {
  name: string;
  health: Health;
  conditions: Condition[];
  release?: string;
  services: CloudService[];
  upgrade?: { from?: string; to?: string; phase?: string; service?: string; startedAt?: string; backup?: string; step?: string; steps: UpgradeStep[] };
  lastBackup?: { time?: string; location?: string; result?: string };
  failure?: { step?: string; kind?: string; name?: string; reason?: string; logTail?: string };
  nextWindow?: string;
  events: ObjectEvent[];
}

/** One server-sent event (`event: change`): something a watched scope shows changed; read the page's route again. */
export interface ChangeEvent {
  scope: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  kind: string;
  namespace?: string;
  name: string;
  resourceVersion?: string;
}

/** `event: denied`: the person may not watch that scope (the stream ends). */
export interface DeniedEvent {
  scope: string;
  error: ApiError;
}
