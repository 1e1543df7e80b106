#!/usr/bin/env bash
# Brings up every test-bed peer on loopback, reusing the ones already running:
# the OCI registries, the Git smart-HTTP server and the OpenStack cloud.
# Installs what is missing from Debian's packages. Exit 1 with a peer's log
# tail when one cannot start.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/lib.sh"
if [ "$(id -u)" != 0 ]; then
  echo "testbed: the test bed installs Debian packages and runs OpenStack services: run it as root (or in a disposable VM/container as root)" >&2
  exit 1
fi
t0=$(date +%s)
for peer in ${TESTBED_PEERS:-registry oci-tools git openstack}; do
  tb_log "== $peer"
  bash "$HERE/$peer/up.sh"
done
tb_log "all peers up in $(( $(date +%s) - t0 )) s"
