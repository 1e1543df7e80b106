import type { CloudConfig } from './clouds.ts';
import { ApiCounters } from './counters.ts';
import { CloudConfigError, OpenStackError } from './errors.ts';
import { expectStatus, Transport, type HttpRequest, type HttpResponse, type WriteGate } from './transport.ts';

interface CatalogEntry {
  type: string;
  endpoints: { interface: string; region?: string; region_id?: string; url: string }[];
}

export interface Token {
  value: string;
  expiresAt: number;
  userId: string;
  projectId?: string;
  /** The roles the token carries in its scope, implied ones included (Keystone leaves domain-specific roles out). */
  roles: { id: string; name: string }[];
  catalog: CatalogEntry[];
}

export type Scope = { projectId: string } | { default: true };

/** How long calls wait for the first call with a new token to a service (Session.firstAlone). */
const firstCallWaitMs = 1000;

/** Re-authenticate this long before a token expires, so no call races its expiry. */
const refreshMarginMs = 5 * 60_000;

/** What a gated session shares with the session it gates (Session.gated). */
interface Shared {
  transport: Transport;
  tokens: Map<string, Promise<Token>>;
  firstCalls: WeakMap<Token, Map<string, Promise<void> | 'answered'>>;
}

/**
 * Keystone v3 authentication: one cached token per scope, refreshed before it
 * expires (never one token per request), the service catalog, and requests
 * that carry the token and retry once after a 401.
 */
export class Session {
  readonly cloud: CloudConfig;
  readonly transport: Transport;
  private readonly tokens: Shared['tokens'];
  /** Per token, per service origin: the first call until its answer came, then `answered` (firstAlone). Gone with the token. */
  private readonly firstCalls: Shared['firstCalls'];

  /** `from`: the session a gated one shares its tokens and first calls with (gated), over its gated transport. */
  constructor(cloud: CloudConfig, counters = new ApiCounters(), options: { timeoutMs?: number; retries?: number } = {}, from?: Shared) {
    this.cloud = cloud;
    this.transport =
      from?.transport ??
      new Transport({ counters, verify: cloud.verify, cacert: cloud.cacert, ...(cloud.timeoutMs ? { timeoutMs: cloud.timeoutMs } : {}), ...options });
    this.tokens = from?.tokens ?? new Map<string, Promise<Token>>();
    this.firstCalls = from?.firstCalls ?? new WeakMap<Token, Map<string, Promise<void> | 'answered'>>();
  }

  /** The same session (tokens, first calls, connections), each write of it waiting for `gate` after the gates it has (Transport.gated). */
  gated(gate: WriteGate): Session {
    return new Session(this.cloud, this.counters, {}, { transport: this.transport.gated(gate), tokens: this.tokens, firstCalls: this.firstCalls });
  }

  get counters(): ApiCounters {
    return this.transport.counters;
  }

  async token(scope: Scope): Promise<Token> {
    const key = 'projectId' in scope ? `project:${scope.projectId}` : 'default';
    const cached = this.tokens.get(key);
    if (cached) {
      const token = await cached.catch(() => undefined);
      if (token && token.expiresAt - Date.now() > refreshMarginMs) return token;
      if (this.tokens.get(key) !== cached) return this.token(scope);
    }
    const pending = this.authenticate(scope);
    this.tokens.set(key, pending);
    pending.catch(() => this.tokens.get(key) === pending && this.tokens.delete(key));
    return pending;
  }

  private invalidate(scope: Scope): void {
    this.tokens.delete('projectId' in scope ? `project:${scope.projectId}` : 'default');
  }

  private async authenticate(scope: Scope): Promise<Token> {
    const c = this.cloud.credentials;
    const userDomain = c.userDomainId ? { id: c.userDomainId } : { name: c.userDomainName ?? 'Default' };
    const user = c.userId ? { id: c.userId } : { name: c.username, domain: userDomain };
    const identity =
      c.type === 'password'
        ? { methods: ['password'], password: { user: { ...user, password: c.password } } }
        : { methods: ['application_credential'], application_credential: c.id ? { id: c.id, secret: c.secret } : { name: c.name, secret: c.secret, user } };
    let scopeBody: unknown;
    if ('projectId' in scope) scopeBody = { project: { id: scope.projectId } };
    else if (c.type === 'application-credential')
      scopeBody = undefined; // bound to its project
    else if (this.cloud.project?.id) scopeBody = { project: { id: this.cloud.project.id } };
    else if (this.cloud.project?.name) {
      const p = this.cloud.project;
      scopeBody = { project: { name: p.name, domain: p.domainId ? { id: p.domainId } : { name: p.domainName ?? 'Default' } } };
    }
    const req: HttpRequest = {
      service: 'identity',
      method: 'POST',
      countAs: 'AUTH',
      retryable: true,
      url: `${this.cloud.authUrl}/auth/tokens`,
      json: { auth: { identity, ...(scopeBody ? { scope: scopeBody } : {}) } },
    };
    const res = await this.transport.send(req);
    if (res.status === 401) {
      throw new CloudConfigError(
        `Keystone at ${this.cloud.authUrl} refused the credentials of cloud "${this.cloud.name}" (${this.cloud.file}); check the user, password or application credential`,
      );
    }
    expectStatus(req, res, [201]);
    const value = res.headers.get('x-subject-token');
    if (!value)
      throw new OpenStackError({
        status: res.status,
        service: 'identity',
        method: 'POST',
        path: '/auth/tokens',
        detail: 'no X-Subject-Token header in the answer',
      });
    if (res.json === undefined)
      throw new OpenStackError({ status: res.status, service: 'identity', method: 'POST', path: '/auth/tokens', detail: 'the answer has no JSON body' });
    const body = res.json as {
      token: { expires_at: string; user: { id: string }; project?: { id: string }; roles?: { id: string; name: string }[]; catalog?: CatalogEntry[] };
    };
    return {
      value,
      expiresAt: Date.parse(body.token.expires_at),
      userId: body.token.user.id,
      projectId: body.token.project?.id,
      roles: body.token.roles ?? [],
      catalog: body.token.catalog ?? [],
    };
  }

  /** The endpoint of a service type, for the cloud's interface and region. */
  endpoint(token: Token, type: string): string {
    const entry = token.catalog.find((e) => e.type === type);
    const region = this.cloud.regionName;
    const ep = entry?.endpoints.find((e) => e.interface === this.cloud.interface && (!region || e.region === region || e.region_id === region));
    if (!ep)
      throw new CloudConfigError(
        `the catalog of cloud "${this.cloud.name}" has no ${this.cloud.interface} ${type} endpoint${region ? ` in region ${region}` : ''}`,
      );
    return ep.url.replace(/\/+$/, '');
  }

  /** A request with the scope's token; one fresh token and one retry after a 401. */
  async send(scope: Scope, req: Omit<HttpRequest, 'url'> & { url: (token: Token) => string }): Promise<HttpResponse> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.token(scope);
      const url = req.url(token);
      const res = await this.firstAlone(token, url, () => this.transport.send({ ...req, url, headers: { ...req.headers, 'x-auth-token': token.value } }));
      if (res.status !== 401 || attempt > 0) return res;
      this.invalidate(scope);
    }
  }

  /**
   * The first call with a token to a service goes alone; the others wait for its answer. A service
   * validates a token it has not seen with Keystone once per worker (keystonemiddleware caches it),
   * but a burst of calls with a new token each validate it: at the start of an apply, twelve
   * validations of one token at once took Keystone 1.4–1.8 s each and most of a core. The wait is
   * bounded: a first call that is slow itself (a bulk create) has had its token validated long before
   * it is answered.
   */
  private async firstAlone(token: Token, url: string, send: () => Promise<HttpResponse>): Promise<HttpResponse> {
    let origins = this.firstCalls.get(token);
    if (!origins) this.firstCalls.set(token, (origins = new Map<string, Promise<void> | 'answered'>()));
    const origin = new URL(url).origin;
    const first = origins.get(origin);
    if (first === 'answered') return send();
    if (first) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([first, new Promise((resolve) => (timer = setTimeout(resolve, firstCallWaitMs)))]);
      clearTimeout(timer);
      return send();
    }
    const pending = send();
    const known = origins;
    known.set(
      origin,
      pending.then(
        () => void known.set(origin, 'answered'),
        // No answer: the next call is the first again.
        () => void known.delete(origin),
      ),
    );
    return pending;
  }
}
