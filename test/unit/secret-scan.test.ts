import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { scan, testbedCredentials, type Credential } from '../support/secret-scan.ts';

/**
 * The scanner of issue 16 item 4 is only worth its zero hits if it finds a
 * secret that is there: planted ones are found, a clean log is not flagged.
 * The planted files live outside the run's TMPDIR and are removed, so they
 * do not fail the run's own scan.
 */
const outsideRun = (): string => mkdtempSync(join(process.env.KS_SECRET_RUN_TMP ? dirname(process.env.KS_SECRET_RUN_TMP) : tmpdir(), 'ks-plant-'));

describe('the secret scan', () => {
  it('knows the test bed credentials (OpenStack, registry, Git)', () => {
    const labels = testbedCredentials().map((c) => c.label);
    expect(labels.some((l) => l.includes('auth.password'))).toBe(true);
    expect(labels.some((l) => l.includes('REG_PASSWORD') || l.includes('GIT_PASSWORD'))).toBe(true);
  });

  it('finds planted credentials and tokens in a throwaway log, and nothing in a clean one', () => {
    const dir = outsideRun();
    try {
      const creds: Credential[] = [
        { label: 'planted long', value: 'planted-Secr3t-value' },
        { label: 'planted weak', value: 'secret' },
      ];
      const fernet = `gAAAAAB${'x'.repeat(150)}`;
      writeFileSync(join(dir, 'agent.log'), ['starting', 'auth with planted-Secr3t-value', `X-Auth-Token: ${fernet}`, '{"password": "secret"}', 'the webhook secret is verified', 'done'].join('\n'));
      // Octavia's encrypted amphora certificate in a failed flow's dump has the Fernet shape: not a token. The same value elsewhere is one.
      writeFileSync(join(dir, 'octavia-worker.log'), [`  |__Atom 'STANDALONE-octavia-create-amp-for-lb-subflow-octavia-generate-serverpem' {'intention': 'EXECUTE', 'provides': '${fernet}'}`, `token ${fernet}`].join('\n'));
      writeFileSync(join(dir, 'clean.log'), 'create  ns/Network/net\nsecretRef resolved\npassword: <redacted>\n');
      // Inputs that hold credentials by design are not outputs: skipped.
      writeFileSync(join(dir, 'clouds.yaml'), 'clouds: {x: {auth: {password: planted-Secr3t-value}}}\n');
      writeFileSync(join(dir, 'config.json'), '{"auths": {"127.0.0.1:5051": {"password": "planted-Secr3t-value"}}}\n');
      const result = scan([dir], creds);
      expect(result.files).toBe(3);
      expect(result.hits.map((h) => `${h.file.slice(dir.length + 1)}:${h.line} ${h.label}`).sort()).toEqual(['agent.log:2 planted long', 'agent.log:3 a Keystone (fernet) token', 'agent.log:4 planted weak', 'octavia-worker.log:2 a Keystone (fernet) token']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds the real test bed passwords when they are written, by label and never by value', () => {
    const dir = outsideRun();
    try {
      const creds = testbedCredentials();
      expect(creds.length).toBeGreaterThan(0);
      writeFileSync(join(dir, 'leak.log'), creds.map((c) => `password: ${c.value}`).join('\n'));
      const result = scan([dir], creds);
      expect(new Set(result.hits.map((h) => h.label))).toEqual(new Set(creds.map((c) => c.label)));
      for (const h of result.hits) for (const c of creds) expect(h.label).not.toContain(c.value.length >= 10 ? c.value : `\u0000`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the tee of this run collects console output (when the run scans)', () => {
    const tee = process.env.KS_SECRET_TEE_DIR;
    expect(tee, 'vitest.config.ts runs test/support/secret-scan-setup.ts as a global setup').toBeTruthy();
    const marker = `tee-marker-${Date.now()}`;
    console.log(marker);
    const files = readdirSync(tee!).filter((f) => f.startsWith('console-'));
    expect(files.length).toBeGreaterThan(0);
    expect(files.some((f) => readFileSync(join(tee!, f), 'utf8').includes(marker))).toBe(true);
  });

  it('the tee collects what children write, and promisify(execFile) still resolves { stdout, stderr }', async () => {
    const tee = process.env.KS_SECRET_TEE_DIR!;
    expect(tee).toBeTruthy();
    const a = `child-marker-a-${Date.now()}`;
    const b = `child-marker-b-${Date.now()}`;
    const { stdout } = await promisify(execFile)('echo', [a]);
    expect(stdout.trim()).toBe(a);
    expect(spawnSync('echo', [b], { encoding: 'utf8' }).stdout.trim()).toBe(b);
    const children = readdirSync(tee)
      .filter((f) => f.startsWith('children-'))
      .map((f) => readFileSync(join(tee, f), 'utf8'))
      .join('');
    expect(children).toContain(a);
    expect(children).toContain(b);
  });
});
