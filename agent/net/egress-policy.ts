import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import { cidrContains, formatCidr, parseCidr, parseIp, type Cidr } from '../util/ip.ts';

/**
 * What the agent may fetch for a manifest (Image source.url, OCI registries,
 * their token realms, redirects and referrers): a tenant names the URL, the
 * agent makes the request from its own network position. Addresses are
 * judged, never host names alone: a name is resolved once and the address
 * judged is the one connected to (egress-gate.ts).
 *
 * Default: public addresses only. Refused: loopback, link-local (cloud
 * metadata at 169.254.169.254), unspecified, multicast, reserved, the
 * private ranges, the cluster's Service and pod ranges and the agent's own
 * addresses; an IPv6 address embedding an IPv4 one (NAT64, 6to4, Teredo,
 * IPv4-compatible) is judged by that IPv4 address too. A cluster admin opens a range or a host for namespaces by label
 * (`allow` rules); the most specific range wins, so opening 10.0.0.0/8 does
 * not open a Service range 10.96.0.0/12 inside it.
 */

export type Labels = Readonly<Record<string, string>>;

/** A range the policy refuses, and the name a refusal gives it. */
export interface DeniedRange {
  cidr: Cidr;
  /** Why it is refused: `loopback`, `link-local (cloud metadata)`, `service CIDR (--egress-service-cidr)`. */
  rule: string;
}

/** An admin's rule: these namespaces may reach these ranges and hosts. */
export interface AllowRule {
  /** Label key → value, all must match; empty = every namespace. */
  namespaceSelector: Labels;
  cidrs: Cidr[];
  /** `host` or `host:port` as written in a URL (a registry is its host[:port]). */
  hosts: string[];
  /** The rule as the admin wrote it, for messages. */
  text: string;
}

export interface EgressPolicy {
  denied: DeniedRange[];
  allow: AllowRule[];
}

const builtIn: [string, string][] = [
  ['0.0.0.0/8', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata)'],
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['100.64.0.0/10', 'shared address space (carrier NAT)'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['198.18.0.0/15', 'benchmarking'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['fc00::/7', 'private (unique local)'],
  ['ff00::/8', 'multicast'],
  ['100::/64', 'discard-only'],
  // Where a local-use NAT64 prefix puts the IPv4 address depends on the site's prefix length (RFC 6052): refused whole, an admin rule opens it.
  ['64:ff9b:1::/48', 'local-use NAT64 (its IPv4 embedding is site-specific)'],
  ['2001:db8::/32', 'documentation'],
];

/** The policy with the built-in ranges, the cluster's ranges and the agent's own addresses refused. */
export function makePolicy(opts: { serviceCidrs?: string[]; podCidrs?: string[]; ownAddresses?: string[]; allow?: AllowRule[] }): EgressPolicy {
  const denied: DeniedRange[] = builtIn.map(([c, rule]) => ({ cidr: mustCidr(c), rule }));
  for (const c of opts.serviceCidrs ?? []) denied.push({ cidr: mustCidr(c), rule: "the cluster's Service CIDR (--egress-service-cidr)" });
  for (const c of opts.podCidrs ?? []) denied.push({ cidr: mustCidr(c), rule: "the cluster's pod CIDR (--egress-pod-cidr)" });
  for (const a of opts.ownAddresses ?? ownAddresses()) {
    const ip = parseIp(a);
    if (ip) denied.push({ cidr: mustCidr(`${a}/${ip.version === 4 ? 32 : 128}`), rule: 'an address of the agent itself' });
  }
  return { denied, allow: opts.allow ?? [] };
}

/** Every address of this process's interfaces (the pod's own IP in a cluster). */
function ownAddresses(): string[] {
  // Loopback interfaces are the loopback rule's: an admin rule opening 127.0.0.0/8 must be enough for them.
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).filter((i) => !i.internal).map((i) => i.address.replace(/%.*$/, '')));
}

function mustCidr(text: string): Cidr {
  const c = parseCidr(text);
  if (!c) throw new Error(`not a CIDR: ${text}`);
  return c;
}

/**
 * `SELECTOR=>TARGET,TARGET`: SELECTOR is `*` or `key=value[,key=value]`;
 * a TARGET with a `/` is a CIDR, else a host or host:port. Throws a message
 * for the flag's user on anything else.
 */
export function parseAllowRule(text: string): AllowRule {
  const arrow = text.indexOf('=>');
  if (arrow < 0) throw new Error(`${text}: expected SELECTOR=>TARGET[,TARGET], e.g. kupenstack.io/egress=lab=>10.20.0.0/16,registry.lab:5000`);
  const selectorText = text.slice(0, arrow).trim();
  const namespaceSelector: Record<string, string> = {};
  if (selectorText !== '*') {
    for (const pair of selectorText.split(',')) {
      const m = /^([^=\s]+)=([^=\s]*)$/.exec(pair.trim());
      if (!m) throw new Error(`${text}: the selector ${JSON.stringify(pair)} is not key=value (or * for every namespace)`);
      namespaceSelector[m[1]!] = m[2]!;
    }
  }
  const cidrs: Cidr[] = [];
  const hosts: string[] = [];
  for (const target of text
    .slice(arrow + 2)
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)) {
    if (target.includes('/')) {
      const c = parseCidr(target);
      if (!c) throw new Error(`${text}: ${target} is not a CIDR`);
      cidrs.push(c);
    } else if (/^[a-z0-9.-]+(:\d{1,5})?$/i.test(target) || /^\[[0-9a-f:.]+\](:\d{1,5})?$/i.test(target)) {
      hosts.push(target.toLowerCase());
    } else {
      throw new Error(`${text}: ${target} is neither a CIDR nor a host[:port]`);
    }
  }
  if (cidrs.length + hosts.length === 0) throw new Error(`${text}: names no CIDR and no host`);
  return { namespaceSelector, cidrs, hosts, text };
}

export function rulesFor(policy: EgressPolicy, labels: Labels): AllowRule[] {
  return policy.allow.filter((r) => Object.entries(r.namespaceSelector).every(([k, v]) => labels[k] === v));
}

/** The verdict on one address a URL's host resolved to. */
export type Verdict = { allowed: true; by?: string } | { allowed: false; range: string; rule: string };

/**
 * `host` as the URL has it (no brackets), `port` the effective port. A host
 * rule passes whatever the name resolves to (the admin named it); a CIDR
 * rule passes an address when it is at least as specific as the narrowest
 * refused range holding it.
 */
export function judge(policy: EgressPolicy, rules: AllowRule[], host: string, port: number, address: string): Verdict {
  const h = host.toLowerCase();
  const hostRule = rules.find((r) => r.hosts.some((t) => t === h || t === `${h}:${port}` || t === `[${h}]` || t === `[${h}]:${port}`));
  if (hostRule) return { allowed: true, by: hostRule.text };
  const embedded = embeddedIPv4(address);
  if (embedded) return judgeEmbedded(policy, rules, address, embedded);
  return judgeAddress(policy, rules, mapped(address));
}

/** One address against the refused ranges and the CIDR rules. */
function judgeAddress(policy: EgressPolicy, rules: AllowRule[], address: string): Verdict {
  const ip = parseIp(address);
  if (!ip) return { allowed: false, range: address, rule: 'not an IP address' };
  let narrowest: DeniedRange | undefined;
  for (const d of policy.denied) if (cidrContains(d.cidr, ip) && (!narrowest || d.cidr.prefix > narrowest.cidr.prefix)) narrowest = d;
  if (!narrowest) return { allowed: true };
  const opening = rules.find((r) => r.cidrs.some((c) => cidrContains(c, ip) && c.prefix >= narrowest.cidr.prefix));
  if (opening) return { allowed: true, by: opening.text };
  return { allowed: false, range: formatCidr(narrowest.cidr), rule: narrowest.rule };
}

/**
 * An IPv6 address that a translator or tunnel turns into IPv4 on the way is
 * judged as that IPv4 (every candidate where the embedding is ambiguous):
 * `64:ff9b::10.0.0.1` reaches 10.0.0.1 through NAT64. The IPv6 address is
 * judged as well, so a refused IPv6 range around it still holds.
 */
function judgeEmbedded(policy: EgressPolicy, rules: AllowRule[], address: string, embedded: Embedded): Verdict {
  let by: string | undefined;
  for (const v4 of embedded.ipv4) {
    const v = judgeAddress(policy, rules, v4);
    if (!v.allowed) return { allowed: false, range: `${v.range} (${v4}, embedded in it by ${embedded.prefix})`, rule: v.rule };
    by = by ?? v.by;
  }
  const own = judgeAddress(policy, rules, address);
  if (!own.allowed) return own;
  by = own.by ?? by;
  return by !== undefined ? { allowed: true, by } : { allowed: true };
}

interface Embedded {
  /** Which mechanism embeds it: `NAT64 64:ff9b::/96`, `6to4 2002::/16`, … */
  prefix: string;
  ipv4: string[];
}

const v4At = (bytes: number[], at: number): string => bytes.slice(at, at + 4).join('.');

/**
 * The IPv4 addresses an IPv6 address carries to the network: NAT64's
 * well-known prefix (64:ff9b::/96, RFC 6052), 6to4 (2002::/16), Teredo (2001::/32: its server and its
 * obfuscated client), IPv4-compatible (::/96, deprecated) and IPv4-translated
 * (::ffff:0:0:0/96). Undefined for any other address; IPv4-mapped is `mapped`'s.
 */
function embeddedIPv4(address: string): Embedded | undefined {
  if (!ipaddr.IPv6.isValid(address)) return undefined;
  const a = ipaddr.IPv6.parse(address);
  const bytes = a.toByteArray();
  const p = a.parts;
  if (a.isIPv4MappedAddress()) return undefined;
  if (p[0] === 0x64 && p[1] === 0xff9b && p[2] === 0 && p.slice(3, 6).every((x) => x === 0)) return { prefix: 'NAT64 64:ff9b::/96', ipv4: [v4At(bytes, 12)] };
  if (p[0] === 0x2002) return { prefix: '6to4 2002::/16', ipv4: [v4At(bytes, 2)] };
  if (p[0] === 0x2001 && p[1] === 0)
    return {
      prefix: 'Teredo 2001::/32',
      ipv4: [
        v4At(bytes, 4),
        bytes
          .slice(12, 16)
          .map((b) => b ^ 0xff)
          .join('.'),
      ],
    };
  if (p.slice(0, 6).every((x) => x === 0)) {
    // :: and ::1 are the unspecified and loopback rules' own (judged as IPv6).
    if (p[6] === 0 && (p[7] === 0 || p[7] === 1)) return undefined;
    return { prefix: 'IPv4-compatible ::/96', ipv4: [v4At(bytes, 12)] };
  }
  if (p.slice(0, 4).every((x) => x === 0) && p[4] === 0xffff && p[5] === 0) return { prefix: 'IPv4-translated ::ffff:0:0:0/96', ipv4: [v4At(bytes, 12)] };
  return undefined;
}

/** `::ffff:127.0.0.1` is 127.0.0.1 on the wire: judged as IPv4. */
function mapped(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const a = ipaddr.parse(address);
  return a instanceof ipaddr.IPv6 && a.isIPv4MappedAddress() ? a.toIPv4Address().toString() : address;
}
