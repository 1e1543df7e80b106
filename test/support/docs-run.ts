import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parse, stringify } from 'yaml';
import type { OpenStackCloud } from '../../agent/openstack/cloud.ts';
import { pageScript, readPage, stepsOf, type Page } from './docs-page.ts';
import { peers } from './peers.ts';
import { testCloudName } from './context.ts';

export const repoRoot = join(import.meta.dirname, '../..');
export const docsRoot = join(repoRoot, 'docs');

export interface PageRun {
  page: string;
  /** 0 when every step passed. */
  code: number;
  steps: { line: string; output: string }[];
}

export interface RunOptions {
  /** The test bed's admin kubeconfig, for pages whose front matter asks for kubernetes (the Kubernetes lane passes it). */
  kubeconfig?: string;
  /** Called with the working directory once the script ended, before it is deleted (a test reads what the page wrote). */
  inspect?: (cwd: string) => void | Promise<void>;
  timeoutMs?: number;
}

/** The test bed's clouds.yaml entry as `mycloud` (admin, TLS as the bed has it), written under the page's HOME. */
function writeClouds(home: string): void {
  const file = process.env.OS_CLIENT_CONFIG_FILE ?? join(homedir(), '.config/openstack/clouds.yaml');
  const all = parse(readFileSync(file, 'utf8')) as { clouds: Record<string, unknown> };
  const entry = all.clouds[testCloudName];
  if (!entry) throw new Error(`${file} has no cloud "${testCloudName}": start the test bed (npm run testbed:up)`);
  mkdirSync(join(home, '.config/openstack'), { recursive: true });
  writeFileSync(join(home, '.config/openstack/clouds.yaml'), stringify({ clouds: { mycloud: entry } }), { mode: 0o600 });
}

/** `kupenstack` on PATH: this checkout's CLI, run by the node running the tests (it runs the .ts sources). */
function writeCli(bin: string): void {
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'kupenstack'), `#!/bin/sh\nexec '${process.execPath}' '${join(repoRoot, 'agent/cli/main.ts')}' "$@"\n`);
  chmodSync(join(bin, 'kupenstack'), 0o755);
}

/** What a page's front matter asks for, as the contract names it. */
function envOf(page: Page, home: string, opts: RunOptions): Record<string, string> {
  const env: Record<string, string> = {};
  if (page.testbed.includes('registry')) env.REGISTRY = new URL(peers.registry).host;
  if (page.testbed.includes('git')) {
    env.GIT_BASE = peers.git.url;
    // The Git server asks Basic on every URL: git reads the test bed's user from the page's HOME, never from the page.
    const url = new URL(peers.git.url);
    writeFileSync(join(home, '.git-credentials'), `${url.protocol}//${peers.git.user}:${peers.git.password}@${url.host}\n`, { mode: 0o600 });
    writeFileSync(join(home, '.gitconfig'), '[credential]\n\thelper = store\n[user]\n\tname = Docs Reader\n\temail = reader@example.org\n[init]\n\tdefaultBranch = main\n');
  }
  if (page.testbed.includes('kubernetes')) {
    if (!opts.kubeconfig) throw new Error('the page needs kubernetes: run it from the Kubernetes lane, which passes the kubeconfig');
    env.KUBECONFIG = opts.kubeconfig;
  }
  return env;
}

/**
 * Runs one page of docs/ as the contract says: its runnable blocks in page order in one
 * `bash -euo pipefail` session, cwd and HOME a fresh temp folder, `kupenstack` on PATH, the clouds.yaml
 * cloud `mycloud`; `# file:` yaml blocks written, other yaml validated. The folder (which holds a
 * clouds.yaml with the bed's password) is deleted afterwards, whatever happened.
 */
export async function runPage(page: string, opts: RunOptions = {}): Promise<PageRun> {
  const parsed = readPage(readFileSync(join(docsRoot, page), 'utf8'));
  if (parsed.problems.length > 0) throw new Error(`${page} breaks the docs contract:\n${parsed.problems.map((p) => `${page}:${p}`).join('\n')}`);
  const home = mkdtempSync(join(tmpdir(), 'ks-docs-'));
  const scratch = join(home, '.ks-docs');
  try {
    mkdirSync(scratch);
    writeClouds(home);
    writeCli(join(scratch, 'bin'));
    const script = join(scratch, 'page.sh');
    writeFileSync(script, pageScript(parsed, scratch));
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, PATH: `${join(scratch, 'bin')}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`, ...envOf(parsed, home, opts) };
    delete env.OS_CLOUD;
    delete env.OS_CLIENT_CONFIG_FILE;
    const { code, output } = await bash(script, home, env, opts.timeoutMs ?? 1_500_000);
    await opts.inspect?.(home);
    return { page, code, steps: stepsOf(output) };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), output });
    });
  });
}

/** What a failed run says: the page, the failing block's line and what it printed. */
export function failure(run: PageRun): string {
  const last = run.steps.at(-1);
  if (run.code === 0) return '';
  return `${run.page}:${last?.line ?? '?'}: the block at line ${last?.line ?? '?'} failed (exit ${run.code}); its output:\n${last?.output ?? ''}`;
}

/** The pages of a section folder (tutorials/, how-to/) that hold at least one runnable block. */
export function runnablePages(section: string, list: (dir: string) => string[]): string[] {
  return list(join(docsRoot, section))
    .map((f) => relative(docsRoot, f))
    .filter((p) => p.endsWith('.md') && readPage(readFileSync(join(docsRoot, p), 'utf8')).blocks.some((b) => b.marker?.kind === 'run'));
}

/** The namespaces a page's yaml blocks declare: the prefixes of what it may make. */
export function namespacesOf(page: string): string[] {
  const parsed = readPage(readFileSync(join(docsRoot, page), 'utf8'));
  const out = new Set<string>();
  for (const b of parsed.blocks.filter((x) => x.lang === 'yaml' || x.lang === 'yml'))
    for (const m of b.body.matchAll(/^\s*(?:metadata:\s*\{[^}]*?namespace:\s*|namespace:\s*)([a-z0-9][a-z0-9-]*)/gm)) out.add(m[1]!);
  return [...out].sort();
}

/**
 * What a page left in OpenStack: projects and objects whose name starts with one of its prefixes
 * (with or without the default `ks-` project prefix). Empty when it cleaned up.
 */
export async function leftovers(cloud: OpenStackCloud, prefixes: readonly string[]): Promise<string[]> {
  if (prefixes.length === 0) return [];
  const named = (n: unknown): boolean => typeof n === 'string' && prefixes.some((p) => n.startsWith(p) || n.startsWith(`ks-${p}`));
  const admin = await cloud.adminApis();
  const out: string[] = [];
  for (const p of await cloud.identity.list<{ name: string; id: string }>('/projects', 'projects')) if (named(p.name)) out.push(`project ${p.name} (${p.id})`);
  for (const [path, key] of [['/networks', 'networks'], ['/routers', 'routers'], ['/security-groups', 'security_groups'], ['/floatingips', 'floatingips']] as const)
    for (const o of await admin.network.list<{ name?: string; description?: string; id: string }>(path, key)) if (named(o.name)) out.push(`${key} ${o.name ?? ''} (${o.id})`);
  for (const o of await admin.compute.list<{ name: string; id: string }>('/servers/detail', 'servers', { all_tenants: 1 })) if (named(o.name)) out.push(`server ${o.name} (${o.id})`);
  for (const o of await admin.image.list<{ name?: string; id: string }>('/images', 'images')) if (named(o.name)) out.push(`image ${o.name ?? ''} (${o.id})`);
  for (const o of await admin.volume.list<{ name?: string; id: string }>('/volumes/detail', 'volumes', { all_tenants: 1 })) if (named(o.name)) out.push(`volume ${o.name ?? ''} (${o.id})`);
  return out;
}
