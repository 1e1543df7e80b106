#!/usr/bin/env bash
# Stop the charts' nginx started by up.sh (its recorded process group only). The build stays.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs charts
tb_stop nginx
