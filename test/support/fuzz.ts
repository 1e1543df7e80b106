import { Readable } from 'node:stream';
import fc from 'fast-check';
import { pack } from 'tar-stream';
import { KupenstackError } from '../../agent/errors.ts';
import { parseManifestFile } from '../../agent/load/parse.ts';
import { specFollows } from '../../agent/hooks/registry-match.ts';
import { handleRegistryHook, type RegistryHookAnswer, type RegistryHookFollower } from '../../agent/hooks/registry-hook.ts';
import { envelopeType } from '../../agent/hooks/registry-senders/distribution.ts';
import { DeliveryLog, hmacHex, identify, parsePush, verify } from '../../agent/hooks/git-webhook.ts';
import type { SchemaRegistry } from '../../agent/schema/registry.ts';
import { validateRevision } from '../../agent/validate/validate.ts';
import { qcow2VirtualSize, sniffDiskFormat } from '../../lib/disk/sniff.ts';
import { diskFromTar } from '../../oci/formats/containerdisk.ts';
import { detectDisk } from '../../oci/formats/detect.ts';
import { parseManifest } from '../../oci/manifest.ts';
import { parseReference } from '../../oci/reference.ts';

/**
 * Fuzz targets (issue 16 item 3), shared by the unit test (a fixed, seeded
 * budget) and `BENCH_ONLY=fuzz` (longer). Each target takes one generated
 * input and must end in time with a result or a typed error
 * (KupenstackError): anything else — a TypeError, a RangeError, a hang — is
 * a finding. Manifest diagnostics must keep the file and a line in it.
 */

export class FuzzFinding extends Error {}

/** A typed error is an answer; any other throw is a crash. */
function typedOnly(err: unknown, target: string): void {
  if (err instanceof KupenstackError) return;
  throw new FuzzFinding(`${target}: untyped ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });
}

const manifestLike = (registry: SchemaRegistry): fc.Arbitrary<string> => {
  const kinds = [...registry.kinds.keys()];
  const scalar = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(null), fc.constantFrom('10.0.0.0/24', '1400', 'net', '-1', '0x10', '~', '"', "'", ':', '- x', '{', '[', '&a', '*a', '!!binary', '\t'));
  const line = fc.tuple(fc.nat({ max: 6 }), fc.constantFrom('name', 'namespace', 'cidr', 'mtu', 'networkRef', 'rules', 'spec', 'metadata', 'kind', 'apiVersion', 'size', 'x'), scalar).map(([indent, key, value]) => `${' '.repeat(indent)}${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  const doc = fc.tuple(fc.constantFrom(...kinds, 'Nope', ''), fc.array(line, { maxLength: 12 })).map(([kind, lines]) => `apiVersion: kupenstack.io/v1alpha1\nkind: ${kind}\nmetadata:\n  name: n\n  namespace: ns\nspec:\n${lines.join('\n')}\n`);
  return fc.oneof(fc.string({ maxLength: 400 }), fc.array(doc, { minLength: 1, maxLength: 4 }).map((d) => d.join('---\n')), fc.json().map((j) => j));
};

export interface FuzzTarget<T> {
  name: string;
  arbitrary: fc.Arbitrary<T>;
  run: (input: T) => void | Promise<void>;
}

export function manifestTarget(registry: SchemaRegistry): FuzzTarget<{ file: string; text: string }> {
  return {
    name: 'manifest loader and validation',
    arbitrary: fc.tuple(fc.constantFrom('ns/a.yaml', 'ns/b.json', 'c.yml'), manifestLike(registry)).map(([file, text]) => ({ file, text })),
    run: ({ file, text }) => {
      const lines = text.split(/\r\n|\r|\n/).length + 1;
      const check = (where: string, d: { file: string; line: number; column: number; code: string }): void => {
        if (d.file !== file || !(d.line >= 1 && d.line <= lines) || !(d.column >= 1)) throw new FuzzFinding(`${where}: ${d.code} at ${d.file}:${d.line}:${d.column} is not a position in ${file} (${lines - 1} lines)`);
      };
      let parsed: ReturnType<typeof parseManifestFile>;
      try {
        parsed = parseManifestFile({ file, text });
      } catch (err) {
        typedOnly(err, 'parseManifestFile');
        return;
      }
      for (const d of parsed.diagnostics) check('parse', d);
      try {
        const validated = validateRevision(parsed.documents, registry);
        for (const d of validated.diagnostics) check('validate', d);
      } catch (err) {
        typedOnly(err, 'validateRevision');
      }
    },
  };
}

const digest = fc.oneof(fc.constant(`sha256:${'a'.repeat(64)}`), fc.string({ maxLength: 80 }));
const descriptor = fc.record({ mediaType: fc.oneof(fc.constantFrom('application/vnd.oci.image.layer.v1.tar', 'application/vnd.oci.image.layer.v1.tar+gzip', 'application/vnd.oci.image.config.v1+json', 'application/vnd.oci.image.manifest.v1+json'), fc.string({ maxLength: 20 })), digest, size: fc.oneof(fc.nat(), fc.integer(), fc.double()), annotations: fc.option(fc.dictionary(fc.string({ maxLength: 40 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer())), { nil: undefined }), platform: fc.option(fc.record({ architecture: fc.oneof(fc.constant('amd64'), fc.integer()) }), { nil: undefined }) }, { requiredKeys: [] });
const ociDocument = fc.oneof(
  fc.record({ schemaVersion: fc.constantFrom(2, 1, '2'), mediaType: fc.option(fc.constantFrom('application/vnd.oci.image.manifest.v1+json', 'application/vnd.oci.image.index.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'), { nil: undefined }), config: descriptor, layers: fc.array(descriptor, { maxLength: 4 }), manifests: fc.option(fc.array(descriptor, { maxLength: 3 }), { nil: undefined }), subject: fc.option(descriptor, { nil: undefined }), annotations: fc.option(fc.dictionary(fc.string({ maxLength: 60 }), fc.string({ maxLength: 40 })), { nil: undefined }) }, { requiredKeys: ['schemaVersion'] }),
  fc.jsonValue(),
);

export const ociManifestTarget: FuzzTarget<{ raw: Buffer; contentType: string | undefined }> = {
  name: 'OCI manifest and index parsers',
  arbitrary: fc.tuple(fc.oneof(ociDocument.map((d) => Buffer.from(JSON.stringify(d) ?? 'null')), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b))), fc.option(fc.constantFrom('application/vnd.oci.image.index.v1+json', 'application/json', 'text/plain; charset=x'), { nil: undefined })).map(([raw, contentType]) => ({ raw, contentType })),
  run: ({ raw, contentType }) => {
    try {
      const m = parseManifest(raw, contentType, 'fuzz');
      if (m.kind === 'manifest') detectDisk(m, 'fuzz');
    } catch (err) {
      typedOnly(err, 'parseManifest/detectDisk');
    }
  },
};

export const referenceTarget: FuzzTarget<string> = {
  name: 'OCI references',
  arbitrary: fc.oneof(fc.string({ maxLength: 120 }), fc.tuple(fc.constantFrom('127.0.0.1:5050/', 'docker.io/', '', 'ghcr.io/a/'), fc.string({ maxLength: 30 }), fc.constantFrom(':', '@sha256:', '@', ''), fc.string({ maxLength: 70 })).map((p) => p.join(''))),
  run: (text) => {
    try {
      parseReference(text);
    } catch (err) {
      typedOnly(err, 'parseReference');
    }
  },
};

/** A tar stream: a real one (random entries), mutated or cut, or plain noise. */
async function tarBytes(entries: { name: string; type: 'file' | 'symlink' | 'directory'; size: number }[]): Promise<Buffer> {
  const p = pack();
  for (const e of entries) {
    if (e.type === 'file') p.entry({ name: e.name, type: 'file' }, Buffer.alloc(e.size, 7));
    else if (e.type === 'symlink') p.entry({ name: e.name, type: 'symlink', linkname: '/etc/passwd' });
    else p.entry({ name: e.name, type: 'directory' });
  }
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

export const tarTarget: FuzzTarget<{ entries: { name: string; type: 'file' | 'symlink' | 'directory'; size: number }[]; flips: { at: number; byte: number }[]; cut: number | null; noise: Uint8Array | null }> = {
  name: 'tar reader (containerDisk layers)',
  arbitrary: fc.record({
    entries: fc.array(fc.record({ name: fc.oneof(fc.constantFrom('disk/disk.img', './disk/x.qcow2', '/disk/a', 'disk', '../disk/a', 'disk/.wh.a', 'etc/x'), fc.string({ minLength: 1, maxLength: 90 })), type: fc.constantFrom('file' as const, 'symlink' as const, 'directory' as const), size: fc.nat({ max: 3000 }) }), { maxLength: 4 }),
    flips: fc.array(fc.record({ at: fc.nat({ max: 4000 }), byte: fc.nat({ max: 255 }) }), { maxLength: 6 }),
    cut: fc.option(fc.nat({ max: 5000 })),
    noise: fc.option(fc.uint8Array({ maxLength: 2048 })),
  }),
  run: async ({ entries, flips, cut, noise }) => {
    let bytes = noise ? Buffer.from(noise) : await tarBytes(entries).catch(() => Buffer.alloc(0));
    for (const f of flips) if (f.at < bytes.length) bytes[f.at] = f.byte;
    if (cut !== null) bytes = bytes.subarray(0, cut);
    let total = 0;
    try {
      for await (const chunk of diskFromTar(Readable.from([bytes]), undefined, 'fuzz layer', {})) total += chunk.length;
    } catch (err) {
      typedOnly(err, 'diskFromTar');
    }
    if (total > bytes.length) throw new FuzzFinding(`diskFromTar yielded ${total} bytes from a ${bytes.length}-byte layer`);
  },
};

const magics = ['QFI\xfb', 'KDMV', '# Disk DescriptorFile', 'vhdxfile', 'conectix', '\x1f\x8b', 'BZh', ''];
export const diskTarget: FuzzTarget<Buffer> = {
  name: 'disk sniffing (qcow2 and friends)',
  arbitrary: fc.tuple(fc.constantFrom(...magics), fc.uint8Array({ maxLength: 300 }), fc.option(fc.nat({ max: 0x9000 }))).map(([magic, rest, pad]) => {
    const head = Buffer.concat([Buffer.from(magic, 'latin1'), Buffer.from(rest)]);
    return pad === null ? head : Buffer.concat([head, Buffer.alloc(Math.max(0, pad - head.length))]);
  }),
  run: (head) => {
    try {
      const format = sniffDiskFormat(head);
      if (typeof format !== 'string') throw new FuzzFinding('sniffDiskFormat returned no format');
      const size = qcow2VirtualSize(head);
      if (size !== undefined && !(Number.isFinite(size) && size >= 0)) throw new FuzzFinding(`qcow2VirtualSize gave ${size}`);
    } catch (err) {
      if (err instanceof FuzzFinding) throw err;
      typedOnly(err, 'sniffDiskFormat');
    }
  },
};

const webhookHeaders = fc.dictionary(fc.constantFrom('x-github-event', 'x-gitea-event', 'x-gitlab-event', 'x-hub-signature-256', 'x-gitea-signature', 'x-gitlab-token', 'x-github-delivery', 'content-type'), fc.oneof(fc.constantFrom('push', 'Push Hook', 'Tag Push Hook', 'create', 'delete', 'ping', 'sha256=00', ''), fc.string({ maxLength: 80 }), fc.array(fc.string({ maxLength: 10 }), { maxLength: 2 })));
const webhookBody = fc.oneof(fc.jsonValue().map((v) => JSON.stringify(v) ?? ''), fc.record({ ref: fc.oneof(fc.string({ maxLength: 30 }), fc.integer(), fc.constant(null)), ref_type: fc.oneof(fc.constantFrom('tag', 'branch'), fc.integer()), after: fc.oneof(fc.string(), fc.integer()), repository: fc.oneof(fc.constant(null), fc.integer(), fc.record({ clone_url: fc.oneof(fc.string(), fc.integer()) })), project: fc.oneof(fc.constant(null), fc.string()) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)), fc.string({ maxLength: 200 }));

export const webhookTarget: FuzzTarget<{ headers: Record<string, string | string[]>; body: string; secret: string }> = {
  name: 'Git webhook payloads',
  arbitrary: fc.record({ headers: webhookHeaders, body: webhookBody, secret: fc.string({ maxLength: 20 }) }),
  run: ({ headers, body, secret }) => {
    const raw = Buffer.from(body);
    try {
      const delivery = identify(headers, raw);
      try {
        verify(delivery, headers, raw, secret || 'fuzz');
      } catch (err) {
        typedOnly(err, 'verify');
      }
      parsePush(delivery, raw);
    } catch (err) {
      typedOnly(err, 'identify/parsePush');
    }
  },
};

const anyValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('push', 'pull', 'delete', 'PUSH_ARTIFACT', 'harbor.artifact.pushed', 'published', 'container', '127.0.0.1:5000/team/os:stable', `sha256:${'0'.repeat(64)}`, '2026-11-25T21:00:00Z', 1e20, -1e20, ''),
  fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }),
);
/** A field of a sender's payload: usually well typed, sometimes anything. */
const field = (good: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => fc.oneof({ weight: 3, arbitrary: good }, { weight: 1, arbitrary: anyValue });
const optional = (shape: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> => fc.record(shape, { requiredKeys: [] });
const repoPath = fc.constantFrom('team/os', 'os', 'library/cirros', 'a/b/c', 'Team/OS');
const tagName = fc.constantFrom('stable', 'latest', '1.2.3', 'v2.0.0-rc1', '');
const refText = fc.constantFrom('127.0.0.1:5000/team/os:stable', 'ghcr.io/o/os@sha256:00', 'nohost', '/x', 'h/', 'h:1/a:b:c', 'quay.io/team/os');
const timeText = fc.oneof(fc.constantFrom('2026-11-25T21:00:00Z', 'yesterday', ''), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
const registryPayloads = fc.oneof(
  optional({ events: field(fc.array(optional({ id: field(fc.uuid()), timestamp: field(timeText), action: field(fc.constantFrom('push', 'pull', 'delete')), target: field(optional({ mediaType: anyValue, repository: field(repoPath), tag: field(tagName), digest: anyValue, url: field(fc.constantFrom('http://127.0.0.1:5000/v2/team/os/manifests/sha256:00', 'not a url')) })), request: field(optional({ host: field(fc.constantFrom('127.0.0.1:5000', 'registry.example')) })) }), { maxLength: 4 })) }),
  optional({ type: field(fc.constantFrom('PUSH_ARTIFACT', 'harbor.artifact.pushed', 'DELETE_ARTIFACT')), occur_at: field(fc.oneof(fc.integer(), fc.double())), time: field(timeText), id: anyValue, event_data: field(optional({ repository: field(optional({ repo_full_name: field(repoPath), namespace: anyValue, name: anyValue })), resources: field(fc.array(optional({ tag: field(tagName), resource_url: field(refText), digest: anyValue }), { maxLength: 3 })) })), data: anyValue }),
  optional({ docker_url: field(refText), repository: field(repoPath), updated_tags: field(fc.array(field(tagName), { maxLength: 3 })) }),
  optional({ push_data: field(optional({ tag: field(tagName), pushed_at: field(fc.oneof(fc.integer(), fc.double())) })), repository: field(optional({ repo_name: field(repoPath) })), callback_url: anyValue }),
  optional({ action: field(fc.constantFrom('published', 'updated', 'deleted')), package: field(optional({ package_type: field(fc.constantFrom('container', 'CONTAINER', 'npm')), ecosystem: anyValue, namespace: anyValue, name: anyValue, owner: field(optional({ login: anyValue })), registry: field(optional({ host: anyValue })), package_version: field(optional({ version: anyValue, package_url: field(refText), container_metadata: field(optional({ tag: field(optional({ name: field(tagName), digest: anyValue })) })) })) })), registry_package: anyValue }),
  fc.jsonValue(),
);
const registrySecret = 'fuzz-registry-secret';

/**
 * Registry notifications (issue 16 item 3): the five senders' payloads, each
 * field well typed or anything, through the whole handler (recognise,
 * authenticate, parse, stale and replay checks) with a follower that matches
 * the pushes against an Image spec. It must answer, never throw; the pushes
 * it hands on name a repository and a tag; no answer repeats the secret.
 */
export const registryHookTarget: FuzzTarget<{ payload: unknown; github: boolean; auth: 'bearer' | 'query' | 'signed' | 'wrong' | 'none'; contentType: string | undefined | null }> = {
  name: 'registry notification payloads',
  arbitrary: fc.record({ payload: registryPayloads, github: fc.boolean(), auth: fc.constantFrom('bearer', 'query', 'signed', 'wrong', 'none'), contentType: fc.constantFrom(undefined, envelopeType, 'application/json', 'text/plain') }),
  run: async ({ payload, github, auth, contentType }) => {
    const body = Buffer.from(JSON.stringify(payload) ?? 'null');
    const headers: Record<string, string> = {};
    if (contentType) headers['content-type'] = contentType;
    if (github) headers['x-github-event'] = 'package';
    if (auth === 'bearer') headers.authorization = `Bearer ${registrySecret}`;
    if (auth === 'signed') headers['x-hub-signature-256'] = `sha256=${hmacHex(registrySecret, body)}`;
    if (auth === 'wrong') headers.authorization = 'Bearer not-it';
    const query = new URLSearchParams(auth === 'query' ? { token: registrySecret } : {});
    const spec = { source: { oci: { repository: '127.0.0.1:5000/team/os', tag: 'stable' } } };
    const follower: RegistryHookFollower = {
      name: 'fuzz',
      secret: () => Promise.resolve(registrySecret),
      moved: (pushes) => {
        for (const p of pushes) if (typeof p.repository !== 'string' || p.repository === '' || (p.tag !== undefined && (typeof p.tag !== 'string' || p.tag === ''))) throw new FuzzFinding(`a push handed on without a repository and tag: ${JSON.stringify(p)}`);
        return specFollows(spec, pushes);
      },
      trigger: () => undefined,
    };
    let answer: RegistryHookAnswer;
    try {
      answer = await handleRegistryHook({ body, headers, query }, [follower], new DeliveryLog(16));
    } catch (err) {
      if (err instanceof FuzzFinding) throw err;
      throw new FuzzFinding(`handleRegistryHook threw: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, { cause: err });
    }
    if (![200, 202, 400, 401, 403].includes(answer.status)) throw new FuzzFinding(`unexpected status ${answer.status}`);
    if (JSON.stringify(answer.body).includes(registrySecret)) throw new FuzzFinding('the answer repeats the secret');
  },
};

export interface FuzzReport {
  name: string;
  runs: number;
  ms: number;
  slowestMs: number;
  heapGrowthMb: number;
}

/**
 * Runs one target for `runs` cases from `seed`, each within `caseMs`; throws
 * the shrunk counterexample (with its seed and path, to replay) on a finding.
 */
export async function fuzz<T>(target: FuzzTarget<T>, options: { seed: number; runs: number; caseMs: number }): Promise<FuzzReport> {
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const started = performance.now();
  let slowest = 0;
  const property = fc.asyncProperty(target.arbitrary, async (input) => {
    const t = performance.now();
    await target.run(input);
    const ms = performance.now() - t;
    slowest = Math.max(slowest, ms);
    if (ms > options.caseMs) throw new FuzzFinding(`${target.name}: one case took ${ms.toFixed(0)} ms (budget ${options.caseMs} ms)`);
  });
  await fc.assert(property, { seed: options.seed, numRuns: options.runs, timeout: options.caseMs * 4, endOnFailure: false });
  globalThis.gc?.();
  return { name: target.name, runs: options.runs, ms: performance.now() - started, slowestMs: slowest, heapGrowthMb: (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024 };
}

/** A target whose input type is forgotten: for tables of targets and for corpus replays (inputs read from JSON). */
export interface AnyTarget {
  name: string;
  replay: (input: unknown) => Promise<void>;
  fuzz: (options: { seed: number; runs: number; caseMs: number }) => Promise<FuzzReport>;
}

export function erase<T>(target: FuzzTarget<T>): AnyTarget {
  return { name: target.name, replay: async (input) => target.run(input as T), fuzz: (options) => fuzz(target, options) };
}
