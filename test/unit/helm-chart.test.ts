import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { LeaderElector } from '../../agent/controller/leases/leader.ts';
import type { CoordinationV1Api } from '@kubernetes/client-node';

/** deploy/chart/kupenstack without helm: its defaults fit its schema, and the schema refuses what helm must refuse. */
const chart = 'deploy/chart/kupenstack';
const schema = JSON.parse(readFileSync(`${chart}/values.schema.json`, 'utf8')) as Record<string, unknown>;
const values = parse(readFileSync(`${chart}/values.yaml`, 'utf8')) as Record<string, unknown>;
const validate = new Ajv({ strict: false }).compile(schema);

describe('the chart values', () => {
  it('values.yaml is valid under values.schema.json', () => {
    expect(validate(values), JSON.stringify(validate.errors)).toBe(true);
  });

  it('every top-level value is documented in the chart README', () => {
    const readme = readFileSync(`${chart}/README.md`, 'utf8');
    const keys = Object.keys(values);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(readme, key).toMatch(new RegExp(`\`${key}[.\`]`));
  });

  it('the schema refuses a misspelt key, a bad duration and a replica count below zero', () => {
    expect(validate({ ...values, replica: 2 })).toBe(false);
    expect(validate({ ...values, leaderElection: { leaseDuration: 'fifteen' } })).toBe(false);
    expect(validate({ ...values, replicas: -1 })).toBe(false);
  });

  it('leader election defaults keep retryPeriod < renewDeadline < leaseDuration (what the controller requires)', () => {
    const le = values.leaderElection as { leaseDuration: string; renewDeadline: string; retryPeriod: string };
    const s = (d: string): number => Number(d.replace(/s$/, ''));
    expect(s(le.retryPeriod)).toBeLessThan(s(le.renewDeadline));
    expect(s(le.renewDeadline)).toBeLessThan(s(le.leaseDuration));
  });
});

describe('LeaderElector timings', () => {
  const coordination = {} as CoordinationV1Api;
  const base = { coordination, namespace: 'ns', name: 'l', identity: 'me' };
  it('refuses a renew deadline not shorter than the lease, or a retry period not shorter than the deadline', () => {
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 })).toThrow(/renew deadline \(10000 ms\) must be shorter than the lease duration/);
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 15_000, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 })).toThrow(/retry period/);
    expect(new LeaderElector({ ...base, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }).isLeader()).toBe(false);
  });
});
