#!/usr/bin/env bash
# Starts, in the background, the builds of the peers that take long cold (Kubernetes' binaries,
# then cosign) unless they are built or building; returns at once. up.sh calls it first; `npm test`
# calls it before its typecheck and lint, so on a fresh machine those minutes go to the builds
# the Kubernetes tests wait for too.
#   bash test/testbed/start-builds.sh [kubernetes] [signing]   # default: both
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# up.sh refuses a non-root user with the reason; nothing to start here then.
[ "$(id -u)" = 0 ] || exit 0
. "$HERE/lib.sh"
for slow in ${*:-kubernetes signing}; do
  bash "$HERE/$slow/build.sh" --check && continue
  # Building already (this script or up.sh started it): the build's own lock would make a second one wait, then find all built.
  if [ "$slow" = kubernetes ]; then
    cache="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"; mkdir -p "$cache"
    flock -n "$cache/kubernetes-build.lock" true || continue
  fi
  # (also the chain below, waiting for Kubernetes' build: its command line names signing/build.sh)
  [ "$slow" = signing ] && pgrep -f "signing/build\.sh" >/dev/null && continue
  mkdir -p "$TB_HOME/$slow"
  tb_log "building the $slow peer's binaries in the background (log: $TB_HOME/$slow/build.log)"
  if [ "$slow" = signing ] && ! bash "$HERE/kubernetes/build.sh" --check; then
    # After Kubernetes' build, not beside it: the control plane is what a fresh machine's run waits
    # for (the Kubernetes lane and the pod tests), cosign only three files the lane runs last
    # (test/support/late-sequencer.ts); built together on 2 cores each took the other's CPU.
    setsid bash -c 'bash "$1/kubernetes/build.sh" --wait $2 && exec bash "$1/signing/build.sh"' _ "$HERE" "$(bash "$HERE/kubernetes/build.sh" --list)" \
      >"$TB_HOME/$slow/build.log" 2>&1 </dev/null 9>&- &
  else
    setsid bash "$HERE/$slow/build.sh" >"$TB_HOME/$slow/build.log" 2>&1 </dev/null 9>&- &
  fi
done
