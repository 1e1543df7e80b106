/**
 * The fault-proxy soak (test/soak/faults-openstack.test.ts) cut to one seed
 * (one round of seeded faults at every OpenStack API), so `npm test` runs it
 * on every change (audit W12); more seeds stay in `npm run test:soak`.
 * KS_FAULT_SEEDS still overrides.
 */
process.env.KS_FAULT_SEEDS ??= '1';
await import('../../soak/faults-openstack.test.ts');
