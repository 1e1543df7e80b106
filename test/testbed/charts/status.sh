#!/usr/bin/env bash
# Exit 0 when the charts' nginx (our recorded process group) serves index.yaml.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs charts
rc=0
if pid=$(tb_pid nginx); then echo "charts nginx: running (process group $pid)"; else echo "charts nginx: NOT running"; rc=1; fi
c=$(tb_http_code "$CHARTS_REPO_URL/index.yaml"); [ "$c" = 200 ] || { echo "GET $CHARTS_REPO_URL/index.yaml -> $c (want 200)"; rc=1; }
exit $rc
