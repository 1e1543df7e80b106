import { lookup } from 'node:dns/promises';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { isIp } from '../util/ip.ts';
import { EgressRefused } from './egress-refused.ts';
import { judge, rulesFor, type AllowRule, type EgressPolicy, type Labels } from './egress-policy.ts';

/** Resolves a host name to every address it has (dns.lookup, as the connection itself would). */
export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** Namespace and the rules that apply to it: two gates with the same key behave the same. */
export function gateKey(namespace: string, rules: AllowRule[]): string {
  return `${namespace}|${rules.map((r) => r.text).join(';')}`;
}

/**
 * The policy applied to one namespace's fetches. `check()` judges a URL
 * before anything is sent (a clear refusal, no request); `dispatcher` is an
 * undici Agent whose connector resolves each host ONCE, judges every address
 * and connects the socket to the address it judged, so a name that answers
 * differently the second time (DNS rebinding) gains nothing, and every
 * redirect, token realm or blob location opens its connection through the
 * same check.
 */
export class EgressGate {
  readonly namespace: string;
  readonly dispatcher: Dispatcher;
  /** Stable text of the rules that apply: part of cache keys of clients built on this gate. */
  readonly key: string;
  private readonly policy: EgressPolicy;
  private readonly rules: AllowRule[];
  private readonly resolve: Resolver;

  constructor(policy: EgressPolicy, namespace: string, labels: Labels, resolver: Resolver = systemResolver) {
    this.policy = policy;
    this.namespace = namespace;
    this.rules = rulesFor(policy, labels);
    this.resolve = resolver;
    this.key = gateKey(namespace, this.rules);
    const base = buildConnector({ timeout: 30_000 });
    this.dispatcher = new Agent({
      headersTimeout: 60_000,
      bodyTimeout: 60_000,
      connect: (opts, callback) => {
        const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
        this.address(opts.protocol, opts.hostname, port).then(
          // `host` stays the name: TLS checks the certificate for it (SNI), the socket goes to the judged address.
          (address) => base({ ...opts, hostname: address }, callback),
          (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
        );
      },
    });
  }

  /** Judges a URL (scheme, host, every address) without connecting; throws EgressRefused. */
  async check(url: string | URL): Promise<void> {
    let u: URL;
    try {
      u = new URL(url);
    } catch (err) {
      throw new EgressRefused(`${String(url)} is not a URL`, 'scheme', { cause: err });
    }
    await this.address(u.protocol, u.hostname, Number(u.port) || (u.protocol === 'https:' ? 443 : 80));
  }

  /** The one address a connection to host:port may use, or EgressRefused naming the rule. */
  private async address(protocol: string, hostname: string, port: number): Promise<string> {
    if (protocol !== 'http:' && protocol !== 'https:') {
      throw new EgressRefused(
        `the egress policy of namespace ${this.namespace} refuses ${protocol} URLs (rule: scheme); only http and https are fetched`,
        'scheme',
      );
    }
    const host = hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    if (isIp(host)) addresses = [host];
    else {
      try {
        addresses = await this.resolve(host);
      } catch (err) {
        throw new EgressRefused(`${host} does not resolve (${(err as Error).message}); nothing was fetched`, 'resolve', { cause: err });
      }
    }
    if (addresses.length === 0) throw new EgressRefused(`${host} resolves to no address; nothing was fetched`, 'resolve');
    // Every address is judged: a name with one public and one internal address is refused whole.
    for (const a of addresses) {
      const v = judge(this.policy, this.rules, host, port, a);
      if (!v.allowed) {
        const via = a === host ? `${host} is` : `${host} resolves to ${a}, which is`;
        throw new EgressRefused(
          `egress refused: ${via} in ${v.range} (rule: ${v.rule}); namespace ${this.namespace} may not fetch from there unless the cluster admin ` +
            `allows it (--egress-allow / Helm egress.allow); nothing was fetched`,
          v.rule,
        );
      }
    }
    return addresses[0]!;
  }
}
