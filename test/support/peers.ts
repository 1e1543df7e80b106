/** Where the test bed's peers listen and how to log in (see test/testbed/README.md). Test-only credentials. */
export const peers = {
  keystone: 'http://127.0.0.1:5000/v3',
  admin: { user: 'admin', password: 'secret', project: 'admin', domain: 'Default' },
  region: 'RegionOne',
  registry: 'http://127.0.0.1:5050',
  registryAuth: { url: 'http://127.0.0.1:5051', user: 'kupenstack', password: 'testbed-secret' },
  git: { url: 'http://127.0.0.1:8180/git', user: 'kupenstack', password: 'testbed-secret' },
} as const;
