import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { OciError } from '../../../oci/errors.ts';
import { pushDisk } from '../../../oci/push.ts';
import { RegistryDiskSource } from '../../../oci/registry-disk-source.ts';
import { randomFile, registries, tempDir, uniqueRepo } from '../../support/oci.ts';

/**
 * The test-bed registry on 127.0.0.1:5050 speaks plain HTTP. A user who
 * forgets --insecure is told so in words, not with OpenSSL's "wrong version
 * number"; with --insecure the same reference works.
 */

const plain = registries.plain;
const advice = `${plain} answered in plain HTTP, not TLS; if this registry has no TLS, pass --insecure`;

function kupenstack(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['agent/cli/main.ts', ...args], { encoding: 'utf8' });
}

describe('a plain-HTTP registry reached without --insecure', () => {
  const repo = uniqueRepo('plain-http');
  let disk: string;

  beforeAll(async () => {
    disk = randomFile(tempDir(), 'disk.raw', 64 * 1024);
    await pushDisk(disk, `${plain}/${repo}:1`, { insecure: true });
  });

  it('image inspect says to pass --insecure, and works with it', () => {
    const refused = kupenstack('image', 'inspect', `${plain}/${repo}:1`);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(`kupenstack: ${advice}\n`);
    expect(refused.stderr).not.toMatch(/wrong version number|SSL/);
    const shown = kupenstack('image', 'inspect', `${plain}/${repo}:1`, '--insecure', '-o', 'json');
    expect(shown.status).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ reference: expect.stringContaining(`${plain}/${repo}@sha256:`) as unknown, diskFormat: 'raw' });
  });

  it('image push says the same, and pushes nothing', () => {
    const refused = kupenstack('image', 'push', join(disk), `${plain}/${repo}:2`, '-q');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(`kupenstack: ${advice}\n`);
  });

  it('the library answers with a typed error, and is not retried', async () => {
    const started = Date.now();
    const err = await new RegistryDiskSource().resolve({ repository: `${plain}/${repo}`, tag: '1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OciError);
    expect(err).toMatchObject({ code: 'oci.network', message: advice });
    // Retries of a network error back off for seconds; this answer comes at once.
    expect(Date.now() - started).toBeLessThan(2000);
    // Nothing under the tag 2 was pushed by the refused push.
    await expect(new RegistryDiskSource().resolve({ repository: `${plain}/${repo}`, tag: '2', insecure: true })).rejects.toMatchObject({ code: 'oci.not-found' });
  });
});
