import { describe, expect, it } from 'vitest';
import { foreignImport, refusalOf } from '../../agent/act/refusals.ts';
import { KupenstackError } from '../../agent/errors.ts';
import { EgressRefused } from '../../agent/net/egress-refused.ts';
import { OciError } from '../../oci/errors.ts';

const mine = 'p-mine';

describe('an import of what the project may not use is refused', () => {
  it.each([
    ['another project\'s private network', 'Network', { id: 'n', project_id: 'p-other', shared: false }],
    ['another project\'s private image', 'Image', { id: 'i', owner: 'p-other', visibility: 'private' }],
    ['another project\'s image shared with others', 'Image', { id: 'i', owner: 'p-other', visibility: 'shared' }],
    ['another project\'s volume', 'Volume', { id: 'v', 'os-vol-tenant-attr:tenant_id': 'p-other' }],
    ['another project\'s security group (tenant_id only)', 'SecurityGroup', { id: 's', tenant_id: 'p-other' }],
  ])('%s', (_what, kind, raw) => {
    const err = foreignImport(kind, raw, mine);
    expect(err?.code).toBe('import.foreign');
    expect(err?.message).toContain(`belongs to another project (p-other) and is not shared with this namespace's project (${mine})`);
  });

  it.each([
    ['its own network', 'Network', { project_id: mine }],
    ['a shared network', 'Network', { project_id: 'p-other', shared: true }],
    ['an external network', 'Network', { project_id: 'p-admin', 'router:external': true }],
    ['a public image', 'Image', { owner: 'p-admin', visibility: 'public' }],
    ['a community image', 'Image', { owner: 'p-other', visibility: 'community' }],
    ['a flavor (no owner field)', 'Flavor', { id: 'f', name: 'm1.small' }],
  ])('%s is not', (_what, kind, raw) => {
    expect(foreignImport(kind, raw, mine)).toBeUndefined();
  });
});

describe('an adoption of what the project does not own is refused, shared or not', () => {
  it.each([
    ['a shared network of another project', 'Network', { id: 'n', project_id: 'p-other', shared: true }],
    ['an external network', 'Network', { id: 'n', project_id: 'p-admin', 'router:external': true }],
    ['a public image of another project', 'Image', { id: 'i', owner: 'p-admin', visibility: 'public' }],
  ])('%s', (_what, kind, raw) => {
    expect(foreignImport(kind, raw, mine), 'usable: an observe-only import may use it').toBeUndefined();
    const err = foreignImport(kind, raw, mine, { adopt: true });
    expect(err?.code).toBe('import.foreign');
    expect(err?.message).toContain('only the project\'s own objects can be adopted');
  });

  it('its own objects, and a flavor (no owner field), are adoptable', () => {
    expect(foreignImport('Network', { project_id: mine, shared: true }, mine, { adopt: true })).toBeUndefined();
    expect(foreignImport('Flavor', { id: 'f', name: 'm1.small' }, mine, { adopt: true })).toBeUndefined();
  });
});

describe('refusals are told apart from failures a retry can fix', () => {
  it('an egress refusal, even wrapped by the OCI client, keeps its own words', () => {
    const inner = new EgressRefused('egress refused: 127.0.0.1 is in 127.0.0.0/8 (rule: loopback)', 'loopback');
    const wrapped = new OciError('oci.network', 'GET 127.0.0.1:5050/v2/ failed: fetch failed', { cause: new TypeError('fetch failed', { cause: inner }) });
    expect(refusalOf(wrapped)).toEqual({ reason: 'EgressRefused', error: inner });
  });

  it('import refusals are ImportRefused; other errors are not refusals', () => {
    expect(refusalOf(new KupenstackError('import.foreign', 'x'))?.reason).toBe('ImportRefused');
    expect(refusalOf(new KupenstackError('import.not-found', 'x'))?.reason).toBe('ImportRefused');
    expect(refusalOf(new KupenstackError('image.download', 'x'))).toBeUndefined();
    expect(refusalOf(new OciError('oci.network', 'connection refused'))).toBeUndefined();
  });
});
