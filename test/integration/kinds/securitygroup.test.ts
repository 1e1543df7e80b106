import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Remote } from '../../../agent/kinds/kit/adapter.ts';
import { securityGroup } from '../../../agent/kinds/securitygroup/adapter.ts';
import type { Manifest } from '../../../agent/model/manifest.ts';
import { specHash } from '../../../agent/ownership/marker.ts';
import { manifest, testProject, type TestProject } from '../../support/context.ts';
import { drift } from '../../support/drift.ts';

let t: TestProject;
beforeAll(async () => {
  t = await testProject('securitygroup');
});
afterAll(async () => {
  await t.dispose();
});


function markerOf(m: Manifest, desired: Record<string, unknown>): { owner: string; ref: string; specHash: string } {
  const replace = Object.fromEntries(Object.entries(desired).filter(([k]) => securityGroup.fields[k] === 'replace'));
  return { owner: t.ctx.owner, ref: `SecurityGroup/${m.metadata.name}`, specHash: specHash(replace) };
}

interface RawRule {
  id: string;
  direction: string;
  protocol: string | null;
  port_range_min: number | null;
  remote_group_id: string | null;
}

describe('the SecurityGroup adapter', () => {
  it('creates groups first and their rules as the follow-up update, keeps rules equal to the manifest, and deletes idempotently', async () => {
    const { ctx } = t;
    const web = manifest('SecurityGroup', 'web', ctx.namespace, {
      description: 'web tier',
      tags: ['tier'],
      rules: [
        { direction: 'ingress', protocol: 'tcp', portRangeMin: 22, portRangeMax: 22, remoteIPPrefix: '0.0.0.0/0', description: 'ssh' },
        { direction: 'ingress', ethertype: 'IPv6', protocol: 'tcp', portRangeMin: 443, portRangeMax: 443, remoteIPPrefix: '2001:DB8::/32' },
        { direction: 'ingress', ethertype: 'IPv6', protocol: 'icmp' },
        { direction: 'ingress', protocol: 'any', remoteGroupRef: { name: 'web' } },
        { direction: 'ingress', protocol: 'udp', portRangeMin: 53, portRangeMax: 53, remoteGroupRef: { name: 'db' } },
      ],
    });
    const db = manifest('SecurityGroup', 'db', ctx.namespace, {
      deleteDefaultRules: true,
      rules: [
        { direction: 'ingress', protocol: 'tcp', portRangeMin: 5432, portRangeMax: 5432, remoteGroupRef: { name: 'web' } },
        { direction: 'egress', ethertype: 'IPv4' },
      ],
    });

    // Before the groups exist their cross references cannot resolve: the rules wait, the groups do not.
    const webFirst = await securityGroup.desired(web, ctx);
    expect(webFirst).toEqual({ name: 'web', description: 'web tier', tags: ['tier'] });
    const dbFirst = await securityGroup.desired(db, ctx);
    expect(dbFirst).toEqual({ name: 'db', default_egress: ['IPv4'] });

    const foreign = await ctx.apis.network.post<{ security_group: { id: string } }>('/security-groups', { security_group: { name: 'web' } });
    const webCreated = await securityGroup.create(ctx, web, webFirst, markerOf(web, webFirst));
    const dbCreated = await securityGroup.create(ctx, db, dbFirst, markerOf(db, dbFirst));
    t.ids.set('SecurityGroup/web', webCreated.id);
    t.ids.set('SecurityGroup/db', dbCreated.id);
    try {
      const raw = await ctx.apis.network.get<{ security_group: { project_id: string; description: string; security_group_rules: unknown[] } }>(`/security-groups/${webCreated.id}`);
      expect(raw.security_group.project_id).toBe(ctx.projectId);
      expect(raw.security_group.description).toBe(`web tier [kupenstack ${ctx.owner} SecurityGroup/web ${markerOf(web, webFirst).specHash}]`);
      expect(raw.security_group.security_group_rules).toHaveLength(2); // Neutron's default egress pair, no rule of ours yet

      const webDesired = await securityGroup.desired(web, ctx);
      const dbDesired = await securityGroup.desired(db, ctx);
      expect(webDesired.rules).toEqual(
        expect.arrayContaining([
          { direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: 22, port_range_max: 22, remote_ip_prefix: '0.0.0.0/0', description: 'ssh' },
          { direction: 'ingress', ethertype: 'IPv6', protocol: 'tcp', port_range_min: 443, port_range_max: 443, remote_ip_prefix: '2001:db8::/32' },
          { direction: 'ingress', ethertype: 'IPv6', protocol: 'ipv6-icmp' },
          { direction: 'ingress', ethertype: 'IPv4', remote_group_id: 'self' },
          { direction: 'ingress', ethertype: 'IPv4', protocol: 'udp', port_range_min: 53, port_range_max: 53, remote_group_id: dbCreated.id },
        ]),
      );
      expect(webDesired).not.toHaveProperty('default_egress'); // kept and ignored

      let observed = await securityGroup.observe(ctx);
      expect(observed.map((r) => r.id).sort()).toEqual([webCreated.id, dbCreated.id].sort());
      const byId = (id: string): Remote => observed.find((r) => r.id === id)!;
      expect(drift(securityGroup, webDesired, byId(webCreated.id))).toEqual({ rules: webDesired.rules, tags: ['tier'] });
      expect(drift(securityGroup, dbDesired, byId(dbCreated.id))).toEqual({ rules: dbDesired.rules, default_egress: ['IPv4'] });

      await securityGroup.update(ctx, byId(webCreated.id), drift(securityGroup, webDesired, byId(webCreated.id)), web);
      await securityGroup.update(ctx, byId(dbCreated.id), drift(securityGroup, dbDesired, byId(dbCreated.id)), db);
      observed = await securityGroup.observe(ctx);
      // The no-drift property, for every field desired returns.
      for (const [m, id] of [[web, webCreated.id], [db, dbCreated.id]] as const) {
        const desired = await securityGroup.desired(m, ctx);
        expect(Object.keys(desired).length).toBeGreaterThan(0);
        for (const k of Object.keys(desired)) expect(byId(id).fields[k], `${m.metadata.name}.${k}`).toEqual(desired[k]);
        expect(drift(securityGroup, desired, byId(id))).toEqual({});
        expect(byId(id).marker).toEqual(markerOf(m, m === web ? webFirst : dbFirst));
      }

      // What Neutron holds: the self reference is the group's own id; db lost its IPv6 default egress rule.
      const webRules = (await ctx.apis.network.get<{ security_group: { security_group_rules: RawRule[] } }>(`/security-groups/${webCreated.id}`)).security_group.security_group_rules;
      expect(webRules).toHaveLength(7);
      expect(webRules.filter((r) => r.remote_group_id === webCreated.id)).toHaveLength(1);
      const dbRules = (await ctx.apis.network.get<{ security_group: { security_group_rules: { ethertype: string; direction: string }[] } }>(`/security-groups/${dbCreated.id}`)).security_group.security_group_rules;
      expect(dbRules.map((r) => `${r.direction}/${r.ethertype}`).sort()).toEqual(['egress/IPv4', 'ingress/IPv4']);

      // Out of band: a rule deleted and one added show up as a difference, and the update puts it back.
      const ssh = webRules.find((r) => r.port_range_min === 22)!;
      await ctx.apis.network.remove(`/security-group-rules/${ssh.id}`);
      await ctx.apis.network.post('/security-group-rules', { security_group_rule: { security_group_id: webCreated.id, direction: 'ingress', protocol: 'tcp', port_range_min: 8080, port_range_max: 8080 } });
      observed = await securityGroup.observe(ctx);
      const outOfBand = drift(securityGroup, webDesired, byId(webCreated.id));
      expect(Object.keys(outOfBand)).toEqual(['rules']);
      await securityGroup.update(ctx, byId(webCreated.id), outOfBand, web);
      observed = await securityGroup.observe(ctx);
      expect(drift(securityGroup, webDesired, byId(webCreated.id))).toEqual({});

      // A changed rule is deleted and created again; the others stay as they are.
      const before = new Set((await ctx.apis.network.get<{ security_group: { security_group_rules: RawRule[] } }>(`/security-groups/${webCreated.id}`)).security_group.security_group_rules.map((r) => r.id));
      const rules = (web.spec.rules as Record<string, unknown>[]).map((r) => (r.portRangeMin === 22 ? { ...r, portRangeMin: 2222, portRangeMax: 2222 } : r));
      const web2 = manifest('SecurityGroup', 'web', ctx.namespace, { ...web.spec, rules, name: 'web-2' });
      const web2Desired = await securityGroup.desired(web2, ctx);
      const changes = drift(securityGroup, web2Desired, byId(webCreated.id));
      expect(Object.keys(changes).sort()).toEqual(['name', 'rules']);
      await securityGroup.update(ctx, byId(webCreated.id), changes, web2);
      const after = (await ctx.apis.network.get<{ security_group: { name: string; security_group_rules: RawRule[] } }>(`/security-groups/${webCreated.id}`)).security_group;
      expect(after.name).toBe('web-2');
      expect(after.security_group_rules.filter((r) => !before.has(r.id)).map((r) => r.port_range_min)).toEqual([2222]);
      expect(after.security_group_rules).toHaveLength(7);
      observed = await securityGroup.observe(ctx);
      expect(drift(securityGroup, web2Desired, byId(webCreated.id))).toEqual({});

      // stateful cannot change in place.
      const web3 = manifest('SecurityGroup', 'web', ctx.namespace, { ...web2.spec, stateful: false });
      const changed = drift(securityGroup, await securityGroup.desired(web3, ctx), byId(webCreated.id));
      expect(Object.keys(changed).map((k) => `${k}:${securityGroup.fields[k]}`)).toEqual(['stateful:replace']);

      expect((await securityGroup.get!(ctx, webCreated.id))?.fields.rules).toEqual(web2Desired.rules);
    } finally {
      for (const g of [webCreated, dbCreated]) {
        await securityGroup.delete(ctx, g);
        await securityGroup.delete(ctx, g);
      }
      await ctx.apis.network.remove(`/security-groups/${foreign.security_group.id}`);
    }
    expect(await securityGroup.observe(ctx)).toEqual([]);
    expect(await securityGroup.get!(ctx, webCreated.id)).toBeUndefined();
  });
});
