// Import cycles and layers, checked by `npm run lint` (depcruise): no cycle between
// files, nor between folders (each folder of agent/, and oci/ as a whole against
// agent/); the floors of the house (README.md, Layout): the two front ends side
// by side over the Sync kit and the engine; and each kind behind its one face
// (kinds/<kind>/index.ts). Type-only imports count: a type shared both ways is a
// concept without a home. Paths match anywhere (`(^|/)agent/`), so the rules' own
// tests can plant violations in fixture trees.
const frontEnds = '(^|/)agent/(cli|standalone|controller|gitops)/';
// A file inside a kind's folder (kinds/kit/ is the shared kit, not a kind), and a kind's one face.
const kindInside = '(?:^|/)agent/kinds/(?!kit/)[^/]+/';
const kindFace = '(?:^|/)agent/kinds/[^/]+/index\\.ts$';

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
      comment: 'These folders import each other, directly or around a circle: the folders must form a DAG (README.md, Layout).',
      from: {},
      to: { circular: true },
    },
    {
      name: 'front-ends-are-peers',
      severity: 'error',
      comment: 'The in-cluster front end (controller/, gitops/) and the standalone one (standalone/) stand side by side: each composes sync/, hooks/ and the engine; neither imports the other.',
      from: { path: '(^|/)agent/(controller|gitops)/' },
      to: { path: '(^|/)agent/standalone/' },
    },
    {
      name: 'front-ends-are-peers',
      severity: 'error',
      comment: 'The standalone front end (standalone/) imports nothing of the in-cluster one (controller/, gitops/).',
      from: { path: '(^|/)agent/standalone/' },
      to: { path: '(^|/)agent/(controller|gitops)/' },
    },
    {
      name: 'engine-below-front-ends',
      severity: 'error',
      comment: 'Below the front ends (the engine act/, plan/, kinds/ and the rest; the Sync kit sync/, hooks/, telemetry/) nothing imports a front end (cli/, standalone/, controller/, gitops/): a front end composes them, never the reverse.',
      from: { path: '(^|/)agent/', pathNot: frontEnds },
      to: { path: frontEnds },
    },
    {
      name: 'engine-below-sync-kit',
      severity: 'error',
      comment: 'The engine (act/, plan/, kinds/, glance/) knows no Sync: sync/, hooks/ and telemetry/ are above it.',
      from: { path: '(^|/)agent/(act|plan|kinds|glance)/' },
      to: { path: '(^|/)agent/(sync|hooks|telemetry)/' },
    },
    {
      name: 'engine-door-takes-data',
      severity: 'error',
      comment: 'act/ applies a revision handed to it as data: it reads no folder (load/, validate/check-path.ts) and picks no state store (status/file-store.ts); the front ends do.',
      from: { path: '(^|/)agent/act/' },
      to: { path: '(^|/)agent/(load/|validate/check-path\\.ts|status/file-store\\.ts)' },
    },
    {
      name: 'one-face-per-kind',
      severity: 'error',
      comment:
        "Outside a kind's folder agent/kinds/<kind>/, only its index.ts is imported (its one face); kinds/kit/ and kinds/registry.ts are the shared faces. Hand what another folder needs over as data, or add it to the face.",
      from: { path: '(?:^|/)agent/', pathNot: '(?:^|/)agent/kinds/[^/]+/' },
      to: { path: kindInside, pathNot: kindFace },
    },
    {
      name: 'one-face-per-kind',
      severity: 'error',
      comment: "A kind's folder (or kinds/kit/) imports another kind through that kind's index.ts only.",
      from: { path: '(?:^|/)agent/kinds/([^/]+)/' },
      to: { path: kindInside, pathNot: [kindFace, '(?:^|/)agent/kinds/$1/'] },
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
