import { describe, expect, it } from 'vitest';
import { slowVolumes } from '../testbed/faults/slow-volumes.ts';

/** The slow-volume simulation (test/testbed/faults/slow-volumes.ts): only its volumes, only for slowMs, and a DELETE deferred, never dropped. */
describe('slowVolumes simulation', () => {
  const id = '0b6c3c1e-8f7c-4c2e-9d7e-3f1a2b4c5d6e';
  const other = '1b6c3c1e-8f7c-4c2e-9d7e-3f1a2b4c5d6e';
  const list = { volumes: [{ id, name: 'slow-a', status: 'available' }, { id: other, name: 'other', status: 'available' }] };
  let clock = 0;
  const sim = slowVolumes({ namePrefix: 'slow-', slowMs: 60_000, now: () => clock });
  const get = () => (sim.simulate({ service: 'volumev3', method: 'GET', path: '/v3/p/volumes/detail', body: list }) as typeof list).volumes.map((v) => v.status);
  const seen = (method: string, path: string, body = '') => sim.requests.seen({ service: 'volumev3', method, path, body });

  it('an os-extend shows its volume extending for slowMs; a DELETE is deferred to slowMs after the first and shows it deleting', () => {
    expect(get()).toEqual(['available', 'available']);
    expect(seen('POST', `/v3/p/volumes/${id}/action`, '{"os-extend": {"new_size": 2}}')).toBeUndefined();
    expect(seen('POST', `/v3/p/volumes/${other}/action`, '{"os-extend": {"new_size": 2}}')).toBeUndefined();
    clock = 59_000;
    expect(get()).toEqual(['extending', 'available']);
    clock = 60_000;
    expect(get()).toEqual(['available', 'available']);
    expect(sim.extended(id)).toBe(true);
    expect(sim.extended(other)).toBe(false);

    expect(seen('DELETE', `/v3/p/volumes/${id}`)).toEqual({ deferMs: 60_000, status: 202 });
    expect(seen('DELETE', `/v3/p/volumes/${other}`)).toBeUndefined();
    clock = 100_000;
    // A second DELETE goes with the first: Cinder gets it when the first lands.
    expect(seen('DELETE', `/v3/p/volumes/${id}`)).toEqual({ deferMs: 20_000, status: 202 });
    expect(get()).toEqual(['deleting', 'available']);
    clock = 120_000;
    expect(get()).toEqual(['available', 'available']);
  });
});
