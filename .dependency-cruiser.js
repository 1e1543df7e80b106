// Import cycles and layers, checked by `npm run lint` (depcruise): no cycle between
// files, nor between folders (each folder of agent/, and oci/ as a whole against
// agent/); the floors of the house (README.md, Layout): the two front ends side
// by side over the Sync kit and the engine, cli/ over both, and inside the in-cluster
// one (controller/) a sub-folder per loop; and each kind behind its one face
// (kinds/<kind>/index.ts). Type-only imports count: a type shared both ways is a
// concept without a home. Paths match anywhere (`(^|/)agent/`), so the rules' own
// tests can plant violations in fixture trees.
const frontEnds = '(^|/)agent/(cli|standalone|controller)/';
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
      comment: 'The in-cluster front end (controller/) and the standalone one (standalone/) stand side by side: each composes sync/, hooks/ and the engine; neither imports the other.',
      from: { path: '(^|/)agent/controller/' },
      to: { path: '(^|/)agent/standalone/' },
    },
    {
      name: 'front-ends-are-peers',
      severity: 'error',
      comment: 'The standalone front end (standalone/) imports nothing of the in-cluster one (controller/).',
      from: { path: '(^|/)agent/standalone/' },
      to: { path: '(^|/)agent/controller/' },
    },
    {
      name: 'cli-on-top',
      severity: 'error',
      comment: 'cli/ starts the front ends and prints; neither front end (controller/, standalone/) imports a command or its client code (cli/cluster/).',
      from: { path: '(^|/)agent/(controller|standalone)/' },
      to: { path: '(^|/)agent/cli/' },
    },
    {
      name: 'engine-below-front-ends',
      severity: 'error',
      comment: 'Below the front ends (the engine act/, plan/, kinds/ and the rest; the Sync kit sync/, hooks/, telemetry/, notify/) nothing imports a front end (cli/, standalone/, controller/): a front end composes them, never the reverse.',
      from: { path: '(^|/)agent/', pathNot: frontEnds },
      to: { path: frontEnds },
    },
    {
      name: 'in-cluster-loops-stand-alone',
      severity: 'error',
      comment: 'controller/syncs/ (the Sync loop) and controller/leases/ (Leases and shards) import nothing else of controller/: the resource and cloud loops build on them, not the reverse.',
      from: { path: '(^|/)agent/controller/(syncs|leases)/' },
      to: { path: '(^|/)agent/controller/', pathNot: '(^|/)agent/controller/(syncs|leases)/' },
    },
    {
      name: 'resources-below-clouds',
      severity: 'error',
      comment: 'controller/resources/ (the resource loop) imports nothing of controller/clouds/ (the OpenStackCloud loop), which borrows its work queue and status writing.',
      from: { path: '(^|/)agent/controller/resources/' },
      to: { path: '(^|/)agent/controller/clouds/' },
    },
    {
      name: 'clouds-borrow-the-kit-not-the-loop',
      severity: 'error',
      comment: "controller/clouds/ uses the resource loop's parts (work queue, objects, revision, validation, status store, fence and writer, Event sink), never the loop itself (controller.ts, namespace-run.ts, finalizers, journals, paused, project clean-up).",
      from: { path: '(^|/)agent/controller/clouds/' },
      to: { path: '(^|/)agent/controller/resources/', pathNot: '(^|/)agent/controller/resources/(work-queue|objects|revision|validate-namespace|status-store|status-fence|status-writer|event-sink)\\.ts$' },
    },
    {
      name: 'in-cluster-process-on-top',
      severity: 'error',
      comment: "The files at the top of controller/ compose its loops (process.ts, leadership.ts, routes.ts, loops.ts, health.ts, api-contact.ts, registry-hook.ts): a loop's sub-folder imports of them only the options (options.ts) and the call counters (call-counts.ts).",
      from: { path: '(^|/)agent/controller/[a-z-]+/' },
      to: { path: '(^|/)agent/controller/[a-z-]+\\.ts$', pathNot: '(^|/)agent/controller/(options|call-counts)\\.ts$' },
    },
    {
      name: 'cli-cluster-reads-syncs',
      severity: 'error',
      comment: "cli/cluster/ (the client side of get syncs, get resources, tree sync, events) reads the Sync loop's names and status shapes (controller/syncs/), nothing else of the controller.",
      from: { path: '(^|/)agent/cli/cluster/' },
      to: { path: '(^|/)agent/controller/', pathNot: '(^|/)agent/controller/syncs/' },
    },
    {
      name: 'engine-below-sync-kit',
      severity: 'error',
      comment: 'The engine (act/, plan/, kinds/, glance/) knows no Sync: sync/, hooks/, telemetry/ and notify/ are above it, and no file it imports (config/, the engine settings) reaches them either.',
      from: { path: '(^|/)agent/(act|plan|kinds|glance)/' },
      to: { path: '(^|/)agent/(sync|hooks|telemetry|notify)/', reachable: true },
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
      name: 'view-reads-only',
      severity: 'error',
      comment:
        "view/ (the read-only web view) reads through the person's own Kubernetes client: it imports no part of the engine or the Sync kit (nothing there could act on OpenStack or the cluster as the controller).",
      from: { path: '(^|/)agent/view/' },
      to: { path: '(^|/)agent/(act|plan|kinds|glance|openstack|cloud|sync|hooks|notify|secrets|source|status|export)/' },
    },
    {
      name: 'view-contract-stands-alone',
      severity: 'error',
      comment: "view/api.ts is the contract the browser bundle imports as it is: it imports nothing.",
      from: { path: '(^|/)agent/view/api\\.ts$' },
      to: {},
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
