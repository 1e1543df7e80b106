#!/usr/bin/env bash
# Exit 0 when every peer is up; one line per service.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rc=0
for peer in registry oci-tools health-tools browser signing git openstack kubernetes node charts; do
  bash "$HERE/$peer/status.sh" || rc=1
done
exit $rc
