import { describe, expect, it } from 'vitest';
import type { ExportScope } from '../../agent/kinds/kit/export.ts';
import { virtualMachineExport } from '../../agent/kinds/virtualmachine/export.ts';

/*
 * A server's user data may hold secrets (passwords, tokens in cloud-config): export never writes it into
 * the manifest, it only notes that the server has some (test/integration/export/export-adopt.test.ts runs
 * the export against Nova). The whole spec is compared, so a field added from the raw server shows.
 */
const userData = Buffer.from('#cloud-config\nchpasswd: {list: "root:hunter2-secret"}\n').toString('base64');
const none = undefined as unknown as ExportScope['network'];
const scope: ExportScope = {
  network: none,
  compute: none,
  image: none,
  volume: none,
  memo: (_key, load) => load(),
  projectId: 'p1',
  cloudWide: false,
  listed: (kind) => (kind === 'Image' ? [{ id: 'img1' }] : []),
  ref: (kind, id) => `${kind.toLowerCase()}-${id}`,
};
const server = {
  id: 's1',
  name: 'web',
  status: 'ACTIVE',
  flavor: { original_name: 'm1.small' },
  image: { id: 'img1' },
  addresses: {},
  metadata: { kupenstack_owner: 'o1', role: 'web' },
  'OS-EXT-SRV-ATTR:user_data': userData,
};

describe('VirtualMachine export and user data', () => {
  it('writes the spec without the user data, and notes that the server has some', () => {
    const spec = virtualMachineExport.spec(server, scope);
    expect(spec).toEqual({ flavorName: 'm1.small', imageRef: { name: 'image-img1' }, networks: [], metadata: { role: 'web' } });
    expect(JSON.stringify(spec)).not.toContain(userData);
    expect(virtualMachineExport.note?.(server)).toBe('has user data, not written (it may hold secrets) and left as it is; to manage it, put it in a Secret and set spec.userDataSecretRef');
    expect(virtualMachineExport.note?.({ ...server, 'OS-EXT-SRV-ATTR:user_data': '' })).toBeUndefined();
  });
});
