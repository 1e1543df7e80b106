import ipaddr from 'ipaddr.js';

/** An address or network as a number, so ranges compare with plain arithmetic. */
export interface Cidr {
  version: 4 | 6;
  /** The first address of the network. */
  network: bigint;
  /** The address as written (host bits may be set). */
  address: bigint;
  prefix: number;
  bits: 32 | 128;
}

export function isIp(text: string): boolean {
  return ipaddr.isValid(text) && (ipaddr.IPv4.isValidFourPartDecimal(text) || text.includes(':'));
}

export function isCidr(text: string): boolean {
  return parseCidr(text) !== undefined;
}

export function parseIp(text: string): { version: 4 | 6; value: bigint } | undefined {
  if (!isIp(text)) return undefined;
  const addr = ipaddr.parse(text);
  return { version: addr.kind() === 'ipv4' ? 4 : 6, value: toBigInt(addr.toByteArray()) };
}

export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const bits = ip.version === 4 ? 32 : 128;
  if (prefix > bits) return undefined;
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  return { version: ip.version, network: ip.value & ~hostMask, address: ip.value, prefix, bits };
}

/** Last address of a network. */
export function lastAddress(c: Cidr): bigint {
  return c.network + (1n << BigInt(c.bits - c.prefix)) - 1n;
}

export function cidrContains(c: Cidr, ip: { version: 4 | 6; value: bigint }): boolean {
  return c.version === ip.version && ip.value >= c.network && ip.value <= lastAddress(c);
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return a.version === b.version && a.network <= lastAddress(b) && b.network <= lastAddress(a);
}

export function formatCidr(c: Cidr): string {
  return `${formatIp(c.version, c.network)}/${c.prefix}`;
}

export function formatIp(version: 4 | 6, value: bigint): string {
  const bytes: number[] = [];
  for (let i = (version === 4 ? 4 : 16) - 1; i >= 0; i--) bytes.push(Number((value >> BigInt(i * 8)) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

function toBigInt(bytes: number[]): bigint {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return v;
}
