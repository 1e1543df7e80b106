import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import semver from 'semver';
import { extract } from 'tar-stream';
import YAML from 'yaml';
import type { OpenStackCloudSpec } from '../model/kinds.generated.ts';
import { ChartError } from './errors.ts';
import { runHelm } from './helm.ts';

/**
 * Gets one chart, unpacked, from the cloud's chart source: a folder (chart.path), a classic
 * Helm repository (index.yaml; the package's sha256 checked against the index and the pin)
 * or an OCI registry (helm pull; the manifest digest checked against the pin). What the
 * renderer gets is always a folder, so values.yaml and values_overrides/ can be read.
 */
export interface FetchedChart {
  chart: string;
  dir: string;
  version: string;
  /** sha256 of the package (repository) or of the OCI manifest; undefined for a folder. */
  digest?: string;
  source: string;
}

export interface FetchOptions {
  source: NonNullable<OpenStackCloudSpec['chart']>;
  chart: string;
  helm: string;
  /** Scratch folder for packages and their unpacked trees. */
  workDir: string;
  /** Where a relative chart.path starts (the repository root). */
  baseDir: string;
  signal?: AbortSignal;
}

const DEFAULT_REPOSITORY = 'https://tarballs.opendev.org/openstack/openstack-helm';

export async function fetchChart(opts: FetchOptions): Promise<FetchedChart> {
  const { source, chart } = opts;
  if (source.path !== undefined) {
    const dir = isAbsolute(source.path) ? join(source.path, chart) : resolve(opts.baseDir, source.path, chart);
    const meta = await readChartYaml(dir).catch((err: unknown) => {
      throw new ChartError('chart.missing', chart, `no Chart.yaml in ${dir}; chart.path must hold one folder per chart (<path>/${chart}/Chart.yaml)`, {
        cause: err,
      });
    });
    if (source.version !== undefined && meta.version !== source.version)
      throw new ChartError('chart.version', chart, `${dir} is version ${meta.version}, the spec pins ${source.version}; update chart.version or the folder`);
    return { chart, dir, version: meta.version, source: dir };
  }
  const repository = (source.repository ?? DEFAULT_REPOSITORY).replace(/\/$/, '');
  const pin = source.digests?.[chart]?.replace(/^sha256:/, '');
  const unpackTo = join(opts.workDir, chart);
  if (repository.startsWith('oci://')) return fetchOci(opts, repository, pin, unpackTo);
  return fetchFromIndex(opts, repository, pin, unpackTo);
}

async function fetchFromIndex(opts: FetchOptions, repository: string, pin: string | undefined, unpackTo: string): Promise<FetchedChart> {
  const { chart, source } = opts;
  const indexUrl = `${repository}/index.yaml`;
  const res = await fetch(indexUrl, { signal: opts.signal }).catch((err: unknown) => {
    throw new ChartError('chart.unreachable', chart, `cannot reach ${indexUrl}: ${(err as Error).message}; check chart.repository`, { cause: err });
  });
  if (!res.ok) throw new ChartError('chart.unreachable', chart, `GET ${indexUrl} answered ${res.status}; check chart.repository`);
  const index = YAML.parse(await res.text()) as { entries?: Record<string, { version: string; digest?: string; urls: string[] }[]> };
  const entries = index.entries?.[chart] ?? [];
  if (entries.length === 0) throw new ChartError('chart.missing', chart, `${indexUrl} has no chart named ${chart}`);
  const entry =
    source.version !== undefined
      ? entries.find((e) => e.version === source.version)
      : [...entries].sort((a, b) => semver.rcompare(semver.coerce(a.version) ?? '0.0.0', semver.coerce(b.version) ?? '0.0.0'))[0];
  if (!entry)
    throw new ChartError(
      'chart.version',
      chart,
      `${indexUrl} has no version ${source.version} of ${chart} (it has ${entries.map((e) => e.version).join(', ')})`,
    );
  if (pin !== undefined && entry.digest !== pin)
    throw new ChartError(
      'chart.digest',
      chart,
      `${chart} ${entry.version} in ${indexUrl} has digest sha256:${entry.digest ?? '?'}, the spec pins sha256:${pin}; ` +
        `the package changed under the same version: review it, then update chart.digests.${chart}`,
    );
  const url = new URL(entry.urls[0]!, `${repository}/`).toString();
  const pkg = await fetch(url, { signal: opts.signal });
  if (!pkg.ok) throw new ChartError('chart.unreachable', chart, `GET ${url} answered ${pkg.status}`);
  const bytes = Buffer.from(await pkg.arrayBuffer());
  const digest = createHash('sha256').update(bytes).digest('hex');
  if (entry.digest !== undefined && digest !== entry.digest)
    throw new ChartError(
      'chart.digest',
      chart,
      `${url} has sha256:${digest}, its index says sha256:${entry.digest}; the repository is inconsistent or the download was altered`,
    );
  await mkdir(opts.workDir, { recursive: true });
  const tgz = join(opts.workDir, `${chart}-${entry.version}.tgz`);
  await writeFile(tgz, bytes);
  const dir = await unpack(tgz, unpackTo, chart);
  return { chart, dir, version: entry.version, digest: `sha256:${digest}`, source: url };
}

async function fetchOci(opts: FetchOptions, repository: string, pin: string | undefined, unpackTo: string): Promise<FetchedChart> {
  const { chart, source } = opts;
  const ref = `${repository}/${chart}`;
  const pullDir = join(opts.workDir, `pull-${chart}`);
  await mkdir(pullDir, { recursive: true });
  const args = [
    'pull',
    ref,
    '--destination',
    pullDir,
    ...(source.version !== undefined ? ['--version', source.version] : []),
    ...(source.insecure ? ['--plain-http'] : []),
  ];
  let out;
  try {
    out = await runHelm(opts.helm, args, { signal: opts.signal });
  } catch (err) {
    throw new ChartError('chart.unreachable', chart, `helm pull ${ref} failed: ${(err as Error).message}`, { cause: err });
  }
  const digest = /Digest: sha256:([a-f0-9]{64})/.exec(`${out.stdout}\n${out.stderr}`)?.[1];
  if (pin !== undefined && digest !== pin)
    throw new ChartError(
      'chart.digest',
      chart,
      `${ref} has digest sha256:${digest ?? '?'}, the spec pins sha256:${pin}; review the new package, then update chart.digests.${chart}`,
    );
  const tgz = (await readdir(pullDir)).find((f) => f.endsWith('.tgz'));
  if (!tgz) throw new ChartError('chart.missing', chart, `helm pull ${ref} wrote no package`);
  const dir = await unpack(join(pullDir, tgz), unpackTo, chart);
  const meta = await readChartYaml(dir);
  return { chart, dir, version: meta.version, digest: digest && `sha256:${digest}`, source: ref };
}

async function readChartYaml(dir: string): Promise<{ name: string; version: string }> {
  return YAML.parse(await readFile(join(dir, 'Chart.yaml'), 'utf8')) as { name: string; version: string };
}

/** Unpacks a chart package (its top folder is the chart's name) into `to`; entries may not leave it. */
async function unpack(tgz: string, to: string, chart: string): Promise<string> {
  await mkdir(to, { recursive: true });
  const ex = extract();
  ex.on('entry', (header, stream, next) => {
    const name = header.name.replace(/^\/+/, '');
    const target = resolve(to, name);
    if (!target.startsWith(`${resolve(to)}/`) || header.type !== 'file') {
      stream.resume();
      stream.on('end', next);
      return;
    }
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => void chunks.push(c as Buffer)); // charts are small files
    stream.on('end', () => {
      mkdir(resolve(target, '..'), { recursive: true })
        .then(() => writeFile(target, Buffer.concat(chunks)))
        .then(() => next(), next);
    });
  });
  await pipeline(createReadStream(tgz), createGunzip(), ex);
  const dir = join(to, chart);
  if (!(await stat(join(dir, 'Chart.yaml')).catch(() => undefined))) throw new ChartError('chart.missing', chart, `${tgz} holds no ${chart}/Chart.yaml`);
  return dir;
}
