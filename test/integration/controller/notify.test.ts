import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testCloudName } from '../../support/context.ts';
import { TestRepo } from '../../support/git-remote.ts';
import { ControllerProcess, getJson, kubectl, kubectlOk, prepareSyncBed, serviceAccountKubeconfig, until } from './harness.ts';

/*
 * A Sync's notify: targets, in the cluster, against the real kube-apiserver
 * and the test bed's Git server, with SHAPE-CHECKING RECEIVERS on loopback
 * standing in for the forges (no Gitea/Forgejo could be built here this
 * session: see README "Notifications"). Each receiver checks the request as
 * the API documents it and answers as the API does, refusing what the real
 * one refuses (a wrong token, an unknown state, a GitLab status going back):
 * - GitHub: docs.github.com/en/rest/commits/statuses#create-a-commit-status
 * - GitLab: docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit
 * - Gitea/Forgejo: gitea.com/api/swagger#/repository/repoCreateStatus (CreateStatusOption)
 * - Slack: docs.slack.dev/messaging/sending-messages-using-incoming-webhooks
 * The controller runs with the admin rule that opens loopback (the harness's
 * --egress-allow '*=>127.0.0.0/8'): without it the policy refuses these targets.
 * The namespaces are not opted in: only custom resources are written, no OpenStack.
 */
const run = randomBytes(3).toString('hex');
const ns = `notify-${run}`;
const system = 'kupenstack-system';
const syncName = `notify-${run}`;
const gitSecret = `notify-${run}-git`;
const tokens = { github: `ghp_${randomBytes(8).toString('hex')}`, gitlab: `glpat-${randomBytes(8).toString('hex')}`, gitea: randomBytes(12).toString('hex'), hmac: randomBytes(12).toString('hex') };
const slackPath = `/services/T0${run}/B0${run}/${randomBytes(8).toString('hex')}`;
let controller: ControllerProcess;
let git: TestRepo;
let repository = '';

interface Status { state: string; description: string; context: string }
/** What each receiver accepted, by commit; and every refusal it answered (a test failure names them). */
const statuses: Record<'github' | 'gitlab' | 'gitea', Map<string, Status[]>> = { github: new Map(), gitlab: new Map(), gitea: new Map() };
const slackTexts: string[] = [];
const hooks: { event: string; revision: string; summary: string; diagnostic?: string }[] = [];
const refusals: string[] = [];

function refuse(res: ServerResponse, status: number, why: string): void {
  refusals.push(why);
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ message: why }));
}

/** The forges' own status rules: the states each API lists, and GitLab's forward-only transitions. */
const states = { github: ['error', 'failure', 'pending', 'success'], gitlab: ['pending', 'running', 'success', 'failed', 'canceled', 'skipped'], gitea: ['pending', 'success', 'error', 'failure', 'warning'] };
const gitlabNext: Record<string, string[]> = { pending: ['running', 'success', 'failed', 'canceled'], running: ['success', 'failed', 'canceled'], success: [], failed: [], canceled: [] };

function commitStatus(forge: 'github' | 'gitlab' | 'gitea', req: IncomingMessage, res: ServerResponse, sha: string, body: Record<string, unknown>): void {
  const auth = { github: req.headers.authorization === `Bearer ${tokens.github}`, gitlab: req.headers['private-token'] === tokens.gitlab, gitea: req.headers.authorization === `token ${tokens.gitea}` }[forge];
  if (!auth) return refuse(res, 401, `${forge}: bad credentials`);
  if (!/^application\/json/.test(req.headers['content-type'] ?? '')) return refuse(res, 415, `${forge}: not JSON`);
  if (!/^[0-9a-f]{40}$/.test(sha)) return refuse(res, 422, `${forge}: ${sha} is no commit`);
  const state = String(body.state);
  const context = String(forge === 'gitlab' ? body.name : body.context);
  if (!states[forge].includes(state)) return refuse(res, 422, `${forge}: state ${state} is not one of ${states[forge].join(', ')}`);
  if (typeof body.description !== 'string' || body.description.length > 140) return refuse(res, 422, `${forge}: description missing or over 140`);
  if ('target_url' in body) return refuse(res, 422, `${forge}: a link in a link-free status`);
  const list = statuses[forge].get(sha) ?? [];
  const last = list.at(-1)?.state;
  if (forge === 'gitlab' && last !== undefined && !gitlabNext[last]!.includes(state)) return refuse(res, 400, `gitlab: Cannot transition status via :${state} from :${last}`);
  list.push({ state, description: body.description, context });
  statuses[forge].set(sha, list);
  res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: list.length, state, context, sha }));
}

const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = req.url ?? '';
    if (req.method !== 'POST') return refuse(res, 405, `${req.method} ${url}`);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return refuse(res, 400, `not JSON: ${url}`);
    }
    const repo = repository.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^/github/repos/${repo}/statuses/([^/]+)$`).exec(url))) return commitStatus('github', req, res, m[1]!, body);
    if ((m = new RegExp(`^/gitea/api/v1/repos/${repo}/statuses/([^/]+)$`).exec(url))) return commitStatus('gitea', req, res, m[1]!, body);
    if ((m = new RegExp(`^/gitlab/api/v4/projects/${encodeURIComponent(repository)}/statuses/([^/]+)$`).exec(url))) return commitStatus('gitlab', req, res, m[1]!, body);
    if (url === slackPath) {
      // Slack answers 400 invalid_payload / no_text to anything without a text.
      if (typeof body.text !== 'string' || body.text === '') return refuse(res, 400, 'slack: no_text');
      slackTexts.push(body.text);
      return res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    }
    if (url === '/hook') {
      const want = `sha256=${createHmac('sha256', tokens.hmac).update(raw).digest('hex')}`;
      if (req.headers['x-kupenstack-signature'] !== want) return refuse(res, 401, 'webhook: signature does not match the body');
      hooks.push(body as unknown as (typeof hooks)[number]);
      return res.writeHead(204).end();
    }
    refuse(res, 404, `no route ${url}`);
  });
});

const network = (name: string, mtu: string | number = 1400): string => `apiVersion: kupenstack.io/v1alpha1\nkind: Network\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n  mtu: ${mtu}\n`;
interface SyncStatus { lastAppliedRevision?: string; rejectedRevision?: string; conditions?: { type: string; status: string; reason: string }[] }
const syncStatus = (): SyncStatus => getJson<{ status?: SyncStatus }>(['get', 'sync.kupenstack.io', syncName]).status ?? {};
const states$ = (forge: 'github' | 'gitlab' | 'gitea', sha: string): string[] => (statuses[forge].get(sha) ?? []).map((s) => s.state);

beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  prepareSyncBed({ system, namespaces: [ns], optIn: `not-${run}`, gitopsIn: ns, gitSecret });
  kubectlOk(['create', 'secret', 'generic', `${syncName}-github`, '-n', system, `--from-literal=token=${tokens.github}`]);
  kubectlOk(['create', 'secret', 'generic', `${syncName}-gitlab`, '-n', system, `--from-literal=token=${tokens.gitlab}`]);
  kubectlOk(['create', 'secret', 'generic', `${syncName}-gitea`, '-n', system, `--from-literal=token=${tokens.gitea}`]);
  kubectlOk(['create', 'secret', 'generic', `${syncName}-hmac`, '-n', system, `--from-literal=token=${tokens.hmac}`]);
  // Slack's address is its credential: the Secret holds the whole URL.
  kubectlOk(['create', 'secret', 'generic', `${syncName}-slack`, '-n', system, `--from-literal=token=${base}${slackPath}`]);

  git = await TestRepo.create('notify');
  repository = new URL(git.url).pathname.replace(/^\/+|\.git$/g, '');
  await git.commit({ 'a.yaml': network('a'), 'b.yaml': network('b'), 'c.yaml': network('c') }, 'three networks');
  git.push();

  const config = join(mkdtempSync(join(tmpdir(), 'ks-notify-')), 'kupenstack.yaml');
  writeFileSync(config, `stateDir: ${join(config, '..', 'state')}\n`);
  controller = new ControllerProcess(serviceAccountKubeconfig(system, 'kupenstack-controller'), ['-c', config, '--cloud', testCloudName, '--owner', `nt${run}`, '--opt-in-label', `kupenstack.io/project=${run}-nobody`, '--sync-selector', `kupenstack.io/test-run=${run}`]);
  await controller.start();
  kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'kupenstack.io/v1alpha1',
      kind: 'Sync',
      metadata: { name: syncName, labels: { 'kupenstack.io/test-run': run } },
      spec: {
        source: { git: { url: git.url, ref: { branch: 'main' }, secretRef: { name: gitSecret } } },
        interval: '2s',
        serviceAccountName: 'gitops',
        serviceAccountNamespace: ns,
        notify: [
          { provider: 'github', url: `${base}/github`, secretRef: { name: `${syncName}-github` } },
          { provider: 'gitlab', url: `${base}/gitlab/api/v4`, secretRef: { name: `${syncName}-gitlab` } },
          { provider: 'gitea', url: `${base}/gitea/api/v1`, secretRef: { name: `${syncName}-gitea` } },
          { provider: 'slack', secretRef: { name: `${syncName}-slack` }, events: ['held', 'rejected', 'failed'] },
          { provider: 'webhook', url: `${base}/hook`, secretRef: { name: `${syncName}-hmac` } },
        ],
      },
    }),
  });
}, 600_000);

afterAll(async () => {
  kubectl(['delete', 'sync.kupenstack.io', syncName, '--wait=false']);
  await controller?.stop();
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  kubectl(['delete', 'secret', gitSecret, ...['github', 'gitlab', 'gitea', 'hmac', 'slack'].map((k) => `${syncName}-${k}`), '-n', system]);
  await git?.dispose();
  await new Promise<void>((r) => receiver.close(() => r()));
}, 120_000);

describe('notifications and commit status from a Sync in the cluster (shape-checking receivers)', () => {
  it('a push: pending then success on the commit at GitHub, GitLab and Gitea; a signed webhook says started then applied', async () => {
    const sha = git.head();
    await until('success on the first commit at the three forges', () => Promise.resolve((['github', 'gitlab', 'gitea'] as const).every((f) => states$(f, sha).includes('success'))), 120_000);
    expect(refusals).toEqual([]);
    for (const f of ['github', 'gitlab', 'gitea'] as const) expect(states$(f, sha)).toEqual(['pending', 'success']);
    expect(statuses.github.get(sha)![1]).toEqual({ state: 'success', context: `kupenstack/${syncName}`, description: expect.stringMatching(/^applied revision main@sha1:[0-9a-f]{40}: 3 applied, 0 deleted/) as string });
    expect(hooks.map((h) => [h.event, h.revision])).toEqual([['started', `main@sha1:${sha}`], ['applied', `main@sha1:${sha}`]]);
    // Slack asked for trouble only.
    expect(slackTexts).toEqual([]);
  });

  it('a rejected revision: failure with the file and line at every forge; Slack says rejected, naming them', async () => {
    const sha = await git.commit({ 'd.yaml': network('d', 'lots') }, 'bad mtu');
    git.push();
    await until('failure on the bad commit at the three forges', () => Promise.resolve((['github', 'gitlab', 'gitea'] as const).every((f) => states$(f, sha).length === 2)), 60_000);
    expect(refusals).toEqual([]);
    expect(syncStatus().rejectedRevision).toBe(`main@sha1:${sha}`);
    expect(states$('github', sha)).toEqual(['pending', 'failure']);
    expect(states$('gitlab', sha)).toEqual(['pending', 'failed']);
    expect(states$('gitea', sha)).toEqual(['pending', 'failure']);
    for (const f of ['github', 'gitlab', 'gitea'] as const) expect(statuses[f].get(sha)![1]!.description).toMatch(/^revision main@sha1:[0-9a-f]{40} rejected, nothing from it applied: d\.yaml:7:\d+: error/);
    await until('the Slack message', () => Promise.resolve(slackTexts.length === 1), 10_000, 200);
    expect(slackTexts[0]).toMatch(new RegExp(`^:x: \\*Sync ${syncName}: rejected main@sha1:${sha}\\*\\nrevision main@sha1:${sha} rejected, nothing from it applied\\n\`d\\.yaml:7:\\d+: error `));
  });

  it('a revision that deletes two of three networks is held, and Slack gets one message naming the held objects and how to confirm', async () => {
    const sha = await git.commit({ 'd.yaml': null, 'b.yaml': null, 'c.yaml': null }, 'drop two');
    git.push();
    await until('the held revision', () => Promise.resolve(syncStatus().conditions?.some((c) => c.type === 'Ready' && c.reason === 'DeletionHeld') === true && syncStatus().lastAppliedRevision === `main@sha1:${sha}`), 60_000);
    await until('the held message at Slack', () => Promise.resolve(slackTexts.length === 2), 10_000, 200);
    expect(slackTexts[1]).toMatch(new RegExp(`^:warning: \\*Sync ${syncName}: deletions held main@sha1:${sha}\\*\\nmain@sha1:${sha} applied except 2 deletions held by the mass-delete guard \\(massDeleteThreshold 50%\\): Network/${ns}/b, Network/${ns}/c; confirm with kubectl annotate sync ${syncName} kupenstack\\.io/allow-mass-delete=main@sha1:${sha}$`));
    // The held revision waits for a person: pending (GitLab: running, it cannot go back to pending).
    await until('the held status at the forges', () => Promise.resolve(states$('gitlab', sha).length === 2), 10_000, 200);
    expect(states$('github', sha)).toEqual(['pending', 'pending']);
    expect(states$('gitlab', sha)).toEqual(['pending', 'running']);
    // Timed runs of the held revision (every 2 s) are deduplicated: still one held message.
    const runs = (): number => (controller.log().match(/applied, deletions held/g) ?? []).length;
    const seen = runs();
    await until('two more runs of the held revision', () => Promise.resolve(runs() >= seen + 2), 30_000, 500);
    expect(slackTexts).toHaveLength(2);
    expect(refusals).toEqual([]);
    // No token and no Slack path in the controller's log.
    for (const secret of [...Object.values(tokens), slackPath]) expect(controller.log()).not.toContain(secret);
  });
});
