#!/usr/bin/env bash
# `npm run demo`, the README's main job: bring up the local cloud, the registry
# and the Git server, seed a Git repository from repo-template, run
# `kupenstack agent` against it in the foreground and show the resources
# appear; then it says how to `git push` a change and watch it converge.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
bash "$HERE/up.sh"

cat <<MSG

KupenStack local test bed is up (loopback only):
  OpenStack cloud       kupenstack-local in ~/.config/openstack/clouds.yaml
  OCI registry          http://127.0.0.1:5050        (anonymous; Basic-auth one on :5051)
  Git smart-HTTP        http://127.0.0.1:8180/git/   (user kupenstack)

MSG
exec node "$ROOT/test/testbed/demo/demo.ts"
