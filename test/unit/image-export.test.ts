import { describe, expect, it } from 'vitest';
import { annotationsOf } from '../../agent/glance/export.ts';
import { driftDue } from '../../agent/sync/drift-policy.ts';
import { glanceMetadata } from '../../oci/formats/vmimage-annotations.ts';

describe('image export annotations', () => {
  it('carries what import maps back, and nothing Glance or KupenStack keeps for itself', () => {
    const glance = {
      id: 'x',
      name: 'cirros',
      status: 'active',
      disk_format: 'qcow2',
      checksum: 'abc',
      os_hash_algo: 'sha512',
      os_hash_value: 'def',
      owner: 'p',
      min_disk: 1,
      min_ram: 0,
      os_distro: 'cirros',
      os_version: '0.6.2',
      architecture: 'x86_64',
      hw_disk_bus: 'virtio',
      os_hidden: false,
      os_glance_importing_to_stores: '',
      oci_manifest_digest: 'sha256:aa',
      kupenstack_owner: 'o',
      'owner_specified.openstack.sha256': 'zz',
      stores: 'file',
    };
    const annotations = annotationsOf(glance);
    expect(annotations).toEqual({
      'io.kupenstack.vmimage.os.distro': 'cirros',
      'io.kupenstack.vmimage.os.version': '0.6.2',
      'io.kupenstack.vmimage.architecture': 'x86_64',
      'io.kupenstack.vmimage.min-disk-gb': '1',
      'io.kupenstack.vmimage.property.hw_disk_bus': 'virtio',
    });
    // Import reads the same properties back.
    expect(glanceMetadata(annotations).properties).toEqual({ os_distro: 'cirros', os_version: '0.6.2', architecture: 'x86_64', hw_disk_bus: 'virtio' });
  });
});

describe('a registry notification re-applies what is applied', () => {
  it('is drift-due like a timed run, unlike a Git webhook', () => {
    expect(driftDue('registry', Date.now(), 3_600_000)).toBe(true);
    expect(driftDue('webhook', Date.now(), 3_600_000)).toBe(false);
  });
});
