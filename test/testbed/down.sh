#!/usr/bin/env bash
# Stops exactly the processes the test bed started (by recorded PID), nothing else.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rc=0
for peer in charts node kubernetes openstack git signing registry; do
  bash "$HERE/$peer/down.sh" || rc=1
done
exit $rc
