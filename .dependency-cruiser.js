// Import cycles, checked by `npm run lint` (depcruise): between files, and between
// folders — each folder of agent/, and oci/ as a whole against agent/. Type-only
// imports count: a type shared both ways is a concept without a home.
export default {
  forbidden: [
    {
      name: 'no-file-cycle',
      severity: 'error',
      comment: 'These files import each other, directly or around a circle: move what both need into a third file.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      scope: 'folder',
      severity: 'error',
      comment: 'These folders import each other, directly or around a circle: the folders must form a DAG (source → load → validate → plan → act → status).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'oci-is-a-library',
      severity: 'error',
      comment: 'oci/ is a registry library that knows nothing of the agent or Glance: it may import lib/ and npm packages only.',
      from: { path: '^oci/' },
      to: { path: '^agent/' },
    },
    {
      name: 'lib-is-a-leaf',
      severity: 'error',
      comment: 'lib/ holds what agent/ and oci/ share; it imports neither.',
      from: { path: '^lib/' },
      to: { path: '^(agent|oci)/' },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
  },
};
