import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { difference, replaceHash } from '../../../agent/plan/diff.ts';
import { keyPair, keyPairName } from '../../../agent/kinds/keypair/adapter.ts';
import type { OpenStackError } from '../../../agent/openstack/errors.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';

let t: TestProject;
let other: TestProject;
beforeAll(async () => {
  [t, other] = await Promise.all([testProject('keypair'), testProject('keypair-b')]);
});
afterAll(async () => {
  await Promise.all([t.dispose(), other.dispose()]);
});

/** A fresh OpenSSH ed25519 public key line. */
function publicKey(comment: string): string {
  const der = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'der' });
  const raw = der.subarray(der.length - 32);
  const type = Buffer.from('ssh-ed25519');
  const blob = Buffer.concat([Buffer.from([0, 0, 0, type.length]), type, Buffer.from([0, 0, 0, raw.length]), raw]);
  return `ssh-ed25519 ${blob.toString('base64')} ${comment}\n`;
}

describe('the KeyPair adapter', () => {
  it('imports a public key under a project-prefixed name, observes only this project’s, and treats every change as a replacement', async () => {
    const { ctx } = t;
    const key = publicKey('alice@laptop');
    const m = manifest('KeyPair', 'alice.laptop', ctx.namespace, { publicKey: key });
    const desired = await keyPair.desired(m, ctx);
    expect(desired).toEqual({ name: `${ctx.projectName}_alice.laptop`, public_key: key, type: 'ssh' });
    const marker = { owner: ctx.owner, ref: 'KeyPair/alice.laptop', specHash: replaceHash(keyPair, desired) };

    // Key pairs belong to the agent's user: another project's key (even one whose project name
    // extends ours) and a hand-made key without our prefix are never ours.
    const foreign = await ctx.apis.compute.post<{ keypair: { name: string } }>('/os-keypairs', { keypair: { name: `alice-laptop-${ctx.owner}`, public_key: key } });
    const otherKey = await keyPair.create(other.ctx, manifest('KeyPair', 'alice', other.ctx.namespace, {}), { name: keyPairName(other.ctx.projectName, 'alice'), public_key: key, type: 'ssh' }, marker);
    const lookalike = await ctx.apis.compute.post<{ keypair: { name: string } }>('/os-keypairs', { keypair: { name: `${ctx.projectName}-b_alice`, public_key: key } });

    const created = await keyPair.create(ctx, m, desired, marker);
    try {
      expect(created.id).toBe(`${ctx.projectName}_alice.laptop`);
      const raw = await ctx.apis.compute.get<{ keypair: { name: string; public_key: string; type: string; user_id: string } }>(`/os-keypairs/${encodeURIComponent(created.id)}`);
      expect(raw.keypair).toMatchObject({ name: created.id, public_key: key, type: 'ssh', user_id: (await ctx.cloud.whoami()).userId });

      const observed = await keyPair.observe(ctx);
      expect(observed.map((r) => r.id)).toEqual([created.id]);
      expect(observed[0]!.marker).toEqual(marker);

      // No drift, and a second apply writes nothing.
      const writes = ctx.cloud.counters.write;
      expect(Object.keys(desired).length).toBeGreaterThan(0);
      for (const k of Object.keys(desired)) expect(observed[0]!.fields[k], k).toEqual(desired[k]);
      expect(difference(keyPair, desired, observed[0]!)).toMatchObject({ updates: {}, replace: false });
      expect(ctx.cloud.counters.write).toBe(writes);

      // A new key in Git is a replacement (Nova cannot change a key pair).
      const rotated = await keyPair.desired(manifest('KeyPair', 'alice.laptop', ctx.namespace, { publicKey: publicKey('alice@new') }), ctx);
      expect(difference(keyPair, rotated, observed[0]!)).toMatchObject({ updates: {}, replace: true });

      // A create retried after a crash: 409 on the derived name, still one key pair.
      const retried = await keyPair.create(ctx, m, desired, marker).catch((e: unknown) => e);
      expect((retried as OpenStackError).conflict).toBe(true);
      expect((await keyPair.observe(ctx)).map((r) => r.id)).toEqual([created.id]);

      expect((await keyPair.get!(ctx, created.id))?.marker).toEqual(marker);
      expect(() => keyPair.desired(manifest('KeyPair', 'alice', ctx.namespace, { name: 'bob', publicKey: key }), ctx)).toThrow(/metadata.name/);
    } finally {
      await keyPair.delete(ctx, created);
      await keyPair.delete(ctx, created);
      await keyPair.delete(other.ctx, otherKey);
      await ctx.apis.compute.remove(`/os-keypairs/${foreign.keypair.name}`);
      await ctx.apis.compute.remove(`/os-keypairs/${lookalike.keypair.name}`);
    }
    expect(await keyPair.observe(ctx)).toEqual([]);
    expect(await keyPair.get!(ctx, created.id)).toBeUndefined();
  });
});
