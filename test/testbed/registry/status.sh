#!/usr/bin/env bash
# Exit 0 when both registries are running (our recorded process groups) and
# answer as expected: 5050 /v2/ 200; 5051 /v2/ 401 anonymous, 200 with credentials.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs registry
rc=0
tb_running registry registry-auth registry-token token-server || rc=1
if reg_check; then echo "http checks: ok"; else rc=1; fi
exit $rc
