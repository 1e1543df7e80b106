#!/usr/bin/env bash
# Brings up every test-bed peer on loopback, reusing the ones already running:
# the OCI registries, cosign and the referrers registry, the Git smart-HTTP server, the OpenStack
# cloud, the Kubernetes control plane and its real node (kubelet + containerd), and the test charts (Helm repository + OCI).
# Installs what is missing from Debian's packages. Exit 1 with a peer's log
# tail when one cannot start.
set -euo pipefail
# (lib.sh gives the peers a test run starts the TMPDIR the run started with: they outlive its own.)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib.sh"
if [ "$(id -u)" != 0 ]; then
  echo "testbed: the test bed installs Debian packages and runs OpenStack services: run it as root (or in a disposable VM/container as root)" >&2
  exit 1
fi
t0=$(date +%s)
peers=${TESTBED_PEERS:-registry oci-tools health-tools browser signing git openstack kubernetes node charts}
# Kubernetes' binaries and cosign each take ~25 min to build cold: built in the background beside
# the other peers' installs (their up.sh waits for the build, lock released).
slow=""
for p in kubernetes signing; do case " $peers " in *" $p "*) slow="$slow $p" ;; esac; done
[ -z "$slow" ] || bash "$HERE/start-builds.sh" $slow
# deferred PEER: with TESTBED_DEFER_UNBUILT=1 (the test suite's global setup), true
# when PEER's binaries are still building: it is not waited for here. The tests
# that need it import its peer module, which starts it (test/testbed/deferred.ts),
# and run last, so the builds overlap the OpenStack, registry and Git tests.
deferred() {
  [ "${TESTBED_DEFER_UNBUILT:-}" = 1 ] || return 1
  case $1 in
    kubernetes|node|charts) ! bash "$HERE/kubernetes/build.sh" --check ;;  # the node needs its kubelet, charts the build's helm
    signing) ! bash "$HERE/signing/build.sh" --check ;;
    *) return 1 ;;
  esac
}
started=""
for peer in $peers; do
  if deferred "$peer"; then
    tb_log "== $peer: deferred until its build is done (its tests run last and start it)"
    continue
  fi
  tb_log "== $peer"
  bash "$HERE/$peer/up.sh"
  started="$started $peer"
done
# Every peer again, once all have started: a later peer's start must not have
# cost an earlier one its process (a stale pid file naming a reused PID once
# made the charts peer stop kwok, and every pod test failed an hour later).
for peer in $started; do
  out=$(bash "$HERE/$peer/status.sh" 2>&1) || { printf '%s\ntestbed: %s: was up, but is down once every peer has started (its status above)\n' "$out" "$peer" >&2; exit 1; }
done
tb_log "all peers up in $(( $(date +%s) - t0 )) s"
