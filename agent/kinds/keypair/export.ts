import type { KindExport } from '../kit/export.ts';

/**
 * Nova key pairs belong to a user, not to a project, and carry no place for
 * an ownership marker (the KeyPair kind's marker is its name). So `export`
 * reads the key pairs of the user it runs as (the agent's), and writes one
 * into a project's folder only where a server of that project names it, as an
 * observe-only import the server's `keyPairRef` points at: the server keeps
 * its key, and nothing is renamed or recreated. The public key stays in Nova.
 */
export const keyPairExport: KindExport = {
  kind: 'KeyPair',
  observeOnly: 'a key pair has no place for an ownership marker',
  list: (s) =>
    s.memo('KeyPair:user', async () =>
      (await s.compute.list<{ keypair: { name: string } }>('/os-keypairs', 'keypairs')).map((k) => ({ id: k.keypair.name, name: k.keypair.name })),
    ),
  skip: (raw, s) =>
    s.listed('VirtualMachine').some((vm) => vm.key_name === raw.name)
      ? undefined
      : 'no server of this project names it (key pairs belong to a user, not a project)',
  spec: () => ({}),
};
