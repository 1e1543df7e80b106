import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';

/**
 * Issue 16 item 4: the scanner. Which credentials the test bed uses (read
 * from its own files, never written down here), and where any of them shows
 * up in what a test run produced. A hit names the file, the line and the
 * credential's label — never the value.
 */

export interface Credential {
  /** Where it comes from ("clouds.yaml kupenstack-local auth.password"): what a hit prints. */
  label: string;
  value: string;
}

export interface Hit {
  file: string;
  line: number;
  label: string;
}

const repoRoot = join(import.meta.dirname, '../..');
const testbedHome = process.env.TB_HOME ?? '/var/lib/kupenstack-testbed';

/** `NAME=value` assignments of a test-bed shell file. */
function shellValues(file: string, names: string[]): Credential[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  return names.flatMap((name) => {
    const m = new RegExp(`(?:^|\\s)${name}=("?)([^"\\s]+)\\1`, 'm').exec(text);
    return m ? [{ label: `${file.slice(repoRoot.length + 1)} ${name}`, value: m[2]! }] : [];
  });
}

/** Every password and application-credential secret of a clouds.yaml. */
export function cloudsCredentials(file: string): Credential[] {
  if (!existsSync(file)) return [];
  const doc = parse(readFileSync(file, 'utf8')) as { clouds?: Record<string, { auth?: Record<string, unknown> }> } | null;
  const out: Credential[] = [];
  for (const [name, cloud] of Object.entries(doc?.clouds ?? {})) {
    for (const key of ['password', 'application_credential_secret', 'token']) {
      const v = cloud.auth?.[key];
      if (typeof v === 'string' && v) out.push({ label: `${file} ${name} auth.${key}`, value: v });
    }
  }
  return out;
}

/** The test bed's credentials: OpenStack (clouds.yaml and the service passwords), registry, token server, Git, the demo's webhook secret. */
export function testbedCredentials(): Credential[] {
  const creds = [
    ...cloudsCredentials(process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml')),
    ...shellValues(join(repoRoot, 'test/testbed/openstack/common.sh'), ['ADMIN_PASS', 'SERVICE_PASS', 'DB_PASS']),
    ...shellValues(join(repoRoot, 'test/testbed/registry/common.sh'), ['REG_PASSWORD', 'REG_REFRESH_TOKEN']),
    ...shellValues(join(repoRoot, 'test/testbed/git/common.sh'), ['GIT_PASSWORD']),
  ];
  const webhook = join(testbedHome, 'demo/webhook-secret');
  if (existsSync(webhook)) creds.push({ label: `${webhook}`, value: readFileSync(webhook, 'utf8').trim() });
  return dedupe(creds);
}

function dedupe(creds: Credential[]): Credential[] {
  const seen = new Map<string, Credential>();
  for (const c of creds) if (c.value && !seen.has(c.value)) seen.set(c.value, c);
  return [...seen.values()];
}

/** Tokens found by their shape, whatever their value: Keystone fernet tokens and JWTs (the registry's Bearer tokens). */
const tokenShapes: { label: string; re: RegExp; except?: RegExp }[] = [
  // Octavia Fernet-encrypts the amphora's server certificate with its own key and prints it when a create flow fails
  // (the taskflow atoms that make and date it): the same shape, not a Keystone token.
  { label: 'a Keystone (fernet) token', re: /gAAAAA[A-Za-z0-9_-]{80,}/, except: /Atom '[A-Za-z0-9_-]*octavia-(generate-serverpem|update-cert-expiration)'/ },
  { label: 'a JWT (registry Bearer token)', re: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/ },
];

/** Too short or too common to match on its own ("secret"): only where it is given as a credential. */
const weak = (value: string): boolean => value.length < 10 || /^[a-z]+$/.test(value);
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function matchers(creds: Credential[]): { label: string; re: RegExp; except?: RegExp }[] {
  return [
    ...creds.map((c) => ({
      label: c.label,
      re: weak(c.value)
        ? new RegExp(`(?:pass(?:word|wd)?|secret|token|credential|pwd)["']?\\s*[:=]\\s*["']?${escape(c.value)}(?![A-Za-z0-9_-])|://[^/\\s:@]+:${escape(c.value)}@`, 'i')
        : new RegExp(escape(c.value)),
    })),
    // The same credentials as HTTP Basic auth would carry them.
    ...creds.filter((c) => !weak(c.value)).map((c) => ({ label: `${c.label} (base64)`, re: new RegExp(escape(Buffer.from(`kupenstack:${c.value}`).toString('base64'))) })),
    ...tokenShapes,
  ];
}

export interface ScanResult {
  files: number;
  bytes: number;
  hits: Hit[];
}

/** Inputs that hold credentials by design: not outputs of a run. */
const inputNames = /(^|\/)(clouds\.yaml|secure\.yaml|htpasswd|.*\.kubeconfig|kubeconfig|webhook-secret|.*\.pem|.*\.key|credentials-\d+\.txt|[^/]*serviceaccount[^/]*\/token)$/;
const skipDirs = new Set(['.git', 'node_modules', 'etcd-data', 'pki', 'repos', 'home', 'git-home']);
const maxFileBytes = 64 * 1024 * 1024;

/** Every text file under `roots` (skipping credential inputs, git objects and binaries), line by line against every credential. */
export function scan(roots: string[], creds: Credential[]): ScanResult {
  const ms = matchers(creds);
  const result: ScanResult = { files: 0, bytes: 0, hits: [] };
  const visit = (path: string): void => {
    let st;
    try {
      st = statSync(path);
    } catch {
      return; // gone meanwhile
    }
    if (st.isDirectory()) {
      if (skipDirs.has(path.split('/').pop()!)) return;
      for (const name of readdirSync(path)) visit(join(path, name));
      return;
    }
    if (!st.isFile() || inputNames.test(path) || st.size > maxFileBytes) return;
    const buf = readFileSync(path);
    if (buf.subarray(0, 8192).includes(0)) return; // binary (a disk image, a tarball)
    // A Docker config (a test's fixture, or the one given to the agent) holds registry credentials by design: an input.
    if (/\.json(\.\d+)?$/.test(path) && /^\s*\{\s*"auths"/.test(buf.subarray(0, 64).toString('utf8'))) return;
    result.files++;
    result.bytes += buf.length;
    const lines = buf.toString('utf8').split('\n');
    lines.forEach((line, i) => {
      for (const m of ms) if (m.re.test(line) && !m.except?.test(line)) result.hits.push({ file: path, line: i + 1, label: m.label });
    });
  };
  for (const root of roots) if (existsSync(root)) visit(root);
  return result;
}

/** Credentials tests made up as they ran (application credentials, webhook secrets), harvested by the tee into `credentials-<pid>.txt`. */
export function harvestedCredentials(teeDir: string): Credential[] {
  if (!existsSync(teeDir)) return [];
  return readdirSync(teeDir)
    .filter((f) => /^credentials-\d+\.txt$/.test(f))
    .flatMap((f) =>
      readFileSync(join(teeDir, f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Credential),
    );
}

export function describeHits(hits: Hit[]): string {
  return hits
    .slice(0, 50)
    .map((h) => `${h.file}:${h.line}: ${h.label}`)
    .join('\n');
}
